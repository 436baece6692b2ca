import Foundation

/// Where `keylight-bench server` runs the server and its load (issue 52). On a shared 2-core
/// machine, a server and wrk left to the scheduler take each other's time in proportions that
/// change from run to run, so requests/s did not compare between runs. Pinned (the default with
/// at least two CPUs), the benchmark process, which holds the server, runs on the first CPU it
/// may use, and every client (wrk, the paced client) on the second. Unpinned (`--no-pin`, or a
/// single CPU) both are left to the scheduler, as before.
struct CPUPinning: Sendable {
    /// The CPU of the benchmark process and so of the server (nil: unpinned).
    var serverCPU: Int?
    /// The CPU of wrk and of the paced client (nil: unpinned).
    var clientCPU: Int?

    static let unpinned = CPUPinning(serverCPU: nil, clientCPU: nil)

    var isPinned: Bool { clientCPU != nil }

    /// What runs a client's command on the clients' CPU: `taskset -c <cpu>` before it, or nothing.
    var clientPrefix: [String] { clientCPU.map { ["taskset", "-c", "\($0)"] } ?? [] }

    /// Pins every thread of this process (threads started later inherit it) to the first CPU it
    /// may use and keeps the second for clients; prints a `server.pinning` line either way. With
    /// `requested` false, or fewer than two CPUs, nothing is pinned. taskset missing is an error:
    /// it is in util-linux, on every Debian system.
    static func pinThisProcess(requested: Bool) async throws -> CPUPinning {
        guard requested else {
            printJSONLine("server.pinning", [("pinned", "false"), ("note", #""--no-pin: the server and its clients share every CPU""#)])
            return .unpinned
        }
        let cpus = allowedCPUs()
        guard cpus.count >= 2 else {
            let reason = cpus.isEmpty ? "the CPUs this process may use are unknown (no /proc/self/status)" : "only one CPU to run on"
            printJSONLine("server.pinning", [
                ("pinned", "false"), ("cpus", "\(cpus.count)"),
                ("note", "\"\(reason): not pinned, the server and its clients share what there is\""),
            ])
            return .unpinned
        }
        let pid = ProcessInfo.processInfo.processIdentifier
        let (status, output) = try await Tool.run(["taskset", "-a", "-p", "-c", "\(cpus[0])", "\(pid)"])
        if status == 127 { throw BenchError("taskset is not installed (Debian package util-linux); --no-pin runs without pinning") }
        guard status == 0 else { throw BenchError("taskset could not pin the benchmark to CPU \(cpus[0]) (exit \(status)): \(output)") }
        printJSONLine("server.pinning", [("pinned", "true"), ("server_cpu", "\(cpus[0])"), ("client_cpu", "\(cpus[1])"), ("cpus", "\(cpus.count)")])
        return CPUPinning(serverCPU: cpus[0], clientCPU: cpus[1])
    }

    /// The CPUs this process may run on (its affinity, as `sched_getaffinity` and `nproc` see it),
    /// from `Cpus_allowed_list` in `/proc/self/status` (`0-1`, `0,2-3`); empty where it cannot be read.
    static func allowedCPUs() -> [Int] {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return [] }
        var cpus: [Int] = []
        for part in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            if bounds.count == 1 {
                cpus.append(bounds[0])
            } else if bounds.count == 2, bounds[0] <= bounds[1] {
                cpus += Array(bounds[0]...bounds[1])
            }
        }
        return cpus
    }
}
