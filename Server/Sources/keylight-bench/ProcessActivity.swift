import Foundation

/// Counters of this process's work besides its CPU time, from `/proc` (Linux): minor faults
/// (`minflt` of `/proc/self/stat`: a first touch, through one SQLite connection's `mmap`, of a
/// page that connection had not mapped; the kernel may map several pages a fault) and what it handed to `write`/`pwrite` (`wchar` and `syscw` of
/// `/proc/self/io`: the WAL's frames and the checkpoints' copies, besides sockets), `read` calls
/// (`syscr`: a page SQLite reads without its map, sockets too), and what had to come from the
/// disk (`majflt`, and `read_bytes`: a page the kernel no longer held, which a host's reclaim of
/// cold page cache causes on a machine with memory to spare). The scale phase reports them per
/// request, to tell the license read's page misses from the flush's writes.
struct ProcessActivity: Sendable {
    var minorFaults: Double
    var writtenBytes: Double
    var writeCalls: Double
    var readCalls: Double = 0
    var majorFaults: Double = 0
    var storageReadBytes: Double = 0

    /// Now, or nil where `/proc` is not mounted or reads differently.
    static func now() -> ProcessActivity? {
        guard let fields = ProcessCPU.statFields(), let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
        // minflt is field 10 and majflt field 12 (the fields start after the command's name, field 2).
        var counters: [Substring: Double] = [:]
        for line in io.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1].trimmingCharacters(in: .whitespaces)) { counters[parts[0]] = value }
        }
        guard fields.count > 9, let faults = Double(fields[7]), let major = Double(fields[9]), let written = counters["wchar"], let calls = counters["syscw"],
              let reads = counters["syscr"], let fetched = counters["read_bytes"] else { return nil }
        return ProcessActivity(
            minorFaults: faults, writtenBytes: written, writeCalls: calls, readCalls: reads, majorFaults: major, storageReadBytes: fetched
        )
    }

    /// What happened between `earlier` and `self`, divided by `requests`.
    func perRequest(since earlier: ProcessActivity, requests: Int) -> ProcessActivity {
        let count = Double(max(1, requests))
        return ProcessActivity(
            minorFaults: (minorFaults - earlier.minorFaults) / count, writtenBytes: (writtenBytes - earlier.writtenBytes) / count,
            writeCalls: (writeCalls - earlier.writeCalls) / count, readCalls: (readCalls - earlier.readCalls) / count,
            majorFaults: (majorFaults - earlier.majorFaults) / count, storageReadBytes: (storageReadBytes - earlier.storageReadBytes) / count
        )
    }
}

/// Each leg's ``ProcessActivity`` per request, by leg name, as the rounds record them.
actor LegActivity {
    private(set) var perRequest: [String: [ProcessActivity]] = [:]
    /// CPU microseconds per answered request of the write that ends each leg, by leg name.
    private(set) var endingWrite: [String: [Double]] = [:]

    func add(_ leg: String, _ activity: ProcessActivity) { perRequest[leg, default: []].append(activity) }

    func addEndingWrite(_ leg: String, microsecondsPerRequest: Double) { endingWrite[leg, default: []].append(microsecondsPerRequest) }

    /// Runs one leg's load and records its activity per answered request.
    func measure(_ leg: String, _ run: () async throws -> Wrk.Result) async throws -> Wrk.Result {
        let before = ProcessActivity.now()
        let result = try await run()
        if let before, let after = ProcessActivity.now() {
            add(leg, after.perRequest(since: before, requests: result.requests - result.non2xx))
        }
        return result
    }
}
