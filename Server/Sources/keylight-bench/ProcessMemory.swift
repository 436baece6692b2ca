import Foundation

/// Resident memory of this process, from `/proc/self/status` (MiB; 0 where it cannot be read).
struct ProcessMemory {
    var rssMiB = 0
    var peakMiB = 0

    static func read() -> ProcessMemory {
        var memory = ProcessMemory()
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return memory }
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
            if fields[0] == "VmRSS:" { memory.rssMiB = kib / 1024 }
            if fields[0] == "VmHWM:" { memory.peakMiB = kib / 1024 }
        }
        return memory
    }
}
