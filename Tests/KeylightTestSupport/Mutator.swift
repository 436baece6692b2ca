import Foundation

/// A deterministic generator (SplitMix64) so tests can pin down what randomness produces.
/// Never used outside tests: it is not cryptographically secure.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A seeded mutator for the fuzz tests of every target: byte flips, insertions of special characters and extreme numbers,
/// deletions, truncation, duplication.
public struct Mutator {
    public let seed: UInt64
    private var random: SeededGenerator

    public init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(seed: seed)
    }

    /// A seed for the fuzz test `name`: `KEYLIGHT_FUZZ_SEED` when set (to replay a failure),
    /// else a fresh one. Printed first, so a run that traps still shows how to replay it.
    public static func seed(_ name: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment["KEYLIGHT_FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("fuzz seed for \(name): \(seed) (replay with KEYLIGHT_FUZZ_SEED=\(seed))")
        return seed
    }

    /// Times and numbers at the edges of Int64.
    public let extremes: [Int64] = [.min, .min + 1, -86_400, -1, 0, 1, 1_700_000_000, 253_402_300_799, .max - 1, .max]

    public mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    public mutating func mutate(text: String) -> String {
        var bytes = Array(text.utf8)
        let tokens = ["-9223372036854775808", "9223372036854775807", "18446744073709551616", "1e309", "-0", "NaN",
                      "\u{0}", "\"", "\\", "{", "}", "[", "]", ",", ":", "=", "|", "%", "\u{FEFF}", "é", "\u{10FFFF}", "null", String(repeating: "9", count: 400)]
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            guard !bytes.isEmpty else { bytes = Array(pick(tokens).utf8); continue }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1: bytes[at] = UInt8.random(in: .min ... .max, using: &random)
            case 2: bytes.insert(contentsOf: Array(pick(tokens).utf8), at: at)
            case 3: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...8, using: &random)))
            case 4: bytes.removeSubrange(at...)
            case 5: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 16)], at: at)
            default:
                // Replace a run of digits with an extreme number.
                if let start = bytes[at...].firstIndex(where: { (48...57).contains($0) }) {
                    let end = bytes[start...].firstIndex { !(48...57).contains($0) } ?? bytes.count
                    bytes.replaceSubrange(start..<end, with: Array(String(pick(extremes)).utf8))
                }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
