/// Polls `condition` every 20 ms until it holds or `timeout` passes; answers whether it held.
/// For effects that are written behind (flushes, deliveries): a fixed sleep would either waste
/// time or miss them on a loaded machine.
public func eventually(timeout: Duration = .seconds(10), isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(20))
    }
}
