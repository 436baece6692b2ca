import Foundation

/// Resident memory of a process, from `/proc/<pid>/status` (MiB; 0 where it cannot be read).
struct ProcessMemory {
    var rssMiB = 0
    var peakMiB = 0
    /// VmRSS in KiB, for differences finer than a MiB.
    var rssKiB = 0

    /// This process's.
    static func read() -> ProcessMemory {
        read(statusPath: "/proc/self/status")
    }

    /// Another process's (a child server's, whose memory is then its own alone).
    static func read(pid: Int32) -> ProcessMemory {
        read(statusPath: "/proc/\(pid)/status")
    }

    private static func read(statusPath: String) -> ProcessMemory {
        var memory = ProcessMemory()
        guard let status = try? String(contentsOfFile: statusPath, encoding: .utf8) else { return memory }
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
            if fields[0] == "VmRSS:" {
                memory.rssMiB = kib / 1024
                memory.rssKiB = kib
            }
            if fields[0] == "VmHWM:" { memory.peakMiB = kib / 1024 }
        }
        return memory
    }
}
