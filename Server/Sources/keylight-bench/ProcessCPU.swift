import Foundation

/// The CPU time this process has used, user plus system, over all its threads, from
/// `/proc/self/stat`. The server runs inside the benchmark process and wrk is a child process,
/// so the difference across a wrk run is the server's own cost, whatever wrk spends beside it
/// on the same cores.
enum ProcessCPU {
    /// Seconds of CPU used so far, or nil where `/proc` is not mounted (not Linux).
    static func seconds() -> Double? {
        // utime and stime are fields 14 and 15.
        guard let fields = statFields(), fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system) / ticks : nil
    }

    /// Seconds of CPU process `pid` has used so far (nil when it is gone or `/proc` is absent).
    static func seconds(pid: Int32) -> Double? {
        seconds(statPath: "/proc/\(pid)/stat")
    }

    /// Seconds of CPU used so far by every process whose command is `command` (PostgreSQL's
    /// server and backends are all `postgres`), with what their exited children used.
    static func seconds(command: String) -> Double {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).reduce(0) { total, pid in
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == command else { return total }
            return total + (seconds(statPath: "/proc/\(pid)/stat", children: true) ?? 0)
        }
    }

    /// The fields of a `/proc/<pid>/stat` after "pid (comm)", from field 3 (state) on: index
    /// `n - 3` holds field `n` of proc(5). The command may hold spaces and parentheses, so the
    /// split starts after its last ")".
    static func statFields(_ statPath: String = "/proc/self/stat") -> [Substring]? {
        guard let stat = try? String(contentsOfFile: statPath, encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    private static func seconds(statPath: String, children: Bool = false) -> Double? {
        guard let fields = statFields(statPath), fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]),
              let childUser = Double(fields[13]), let childSystem = Double(fields[14]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system + (children ? childUser + childSystem : 0)) / ticks : nil
    }

    /// Runs `body` and answers its result with the CPU seconds this process spent meanwhile.
    static func measure<R>(_ body: () async throws -> R) async rethrows -> (R, cpuSeconds: Double?) {
        let before = seconds()
        let result = try await body()
        guard let before, let after = seconds() else { return (result, nil) }
        return (result, after - before)
    }
}
