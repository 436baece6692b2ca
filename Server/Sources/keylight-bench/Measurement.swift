import Foundation

/// Times a body over several rounds and reports the median rate, so one noisy round (the other
/// core busy, a page fault) does not decide the figure.
struct Measurement {
    var rounds = 5
    var secondsPerRound: Double

    /// Operations per second: the median over `rounds` rounds, after one warm-up round.
    func opsPerSecond(_ body: () -> Void) -> Double {
        _ = round(body)
        let rates = (0..<rounds).map { _ in round(body) }.sorted()
        return rates[rates.count / 2]
    }

    private func round(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var iterations = 0
        var batch = 16
        let budget = Duration.milliseconds(Int64(secondsPerRound * 1000))
        while clock.now - start < budget {
            for _ in 0..<batch { body() }
            iterations += batch
            batch = min(batch * 2, 4096)
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(iterations) / seconds
    }
}

/// Keeps a value alive so the optimiser cannot drop the work that produced it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// One JSON line: `{"benchmark":…,"ops_per_sec":…,…}`.
func report(_ name: String, opsPerSecond: Double, extra: [(String, String)] = []) {
    var fields = [("benchmark", "\"\(name)\""), ("ops_per_sec", String(format: "%.1f", opsPerSecond))]
    fields += extra
    print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
}

/// One JSON line `{"benchmark":…,…}`; each value is JSON already (quote strings yourself).
func printJSONLine(_ benchmark: String, _ fields: [(String, String)]) {
    let pairs = [("benchmark", "\"\(benchmark)\"")] + fields
    print("{" + pairs.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
}
