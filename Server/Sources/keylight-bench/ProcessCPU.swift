import Foundation

/// The CPU time this process has used, user plus system, over all its threads, from
/// `/proc/self/stat`. The server runs inside the benchmark process and wrk is a child process,
/// so the difference across a wrk run is the server's own cost, whatever wrk spends beside it
/// on the same cores.
enum ProcessCPU {
    /// Seconds of CPU used so far, or nil where `/proc` is not mounted (not Linux).
    static func seconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm)" the fields start at 3 (state); utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system) / ticks : nil
    }

    /// Runs `body` and answers its result with the CPU seconds this process spent meanwhile.
    static func measure<R>(_ body: () async throws -> R) async rethrows -> (R, cpuSeconds: Double?) {
        let before = seconds()
        let result = try await body()
        guard let before, let after = seconds() else { return (result, nil) }
        return (result, after - before)
    }
}
