import Foundation

/// Replays fixed bytes, one per draw (drawing a `UInt8` truncates one `next()`), to test the
/// encoding of known inputs.
struct ScriptedGenerator: RandomNumberGenerator {
    var bytes: [UInt8]
    var position = 0
    mutating func next() -> UInt64 {
        defer { position += 1 }
        return UInt64(bytes[position % bytes.count])
    }
}

/// `../shared` beside the package root (or `KEYLIGHT_SHARED_DIR`), where the conformance
/// vectors live. Tests that need it skip when it is absent.
enum Shared {
    static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["KEYLIGHT_SHARED_DIR"] {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // KeylightCoreTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // package root
            .deletingLastPathComponent()
            .appendingPathComponent("shared")
    }

    static var leaseVectors: URL {
        directory.appendingPathComponent("conformance/keylight-lease-vectors.json")
    }

    static var hasLeaseVectors: Bool {
        FileManager.default.fileExists(atPath: leaseVectors.path)
    }
}
