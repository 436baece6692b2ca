import Foundation

/// A deterministic generator (SplitMix64) so tests can pin down what randomness produces.
/// Never used outside tests: it is not cryptographically secure.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

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

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
