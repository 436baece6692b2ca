import Foundation
@testable import KeylightTrust
import Testing

/// Mutated invitation links (what a camera reads off any QR code): refused with an error, never a trap.
@Suite(.timeLimit(.minutes(2))) struct InvitationFuzzTests {
    @Test func mutatedLinksAreRefusedOrParsedNeverFatal() throws {
        let seed = ProcessInfo.processInfo.environment["KEYLIGHT_FUZZ_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("fuzz seed for invitation links: \(seed) (replay with KEYLIGHT_FUZZ_SEED=\(seed))")
        var random = SeededRandom(state: seed)
        let device = try TestDevice("Mac")
        let link = try device.invite().url()
        let now: Int64 = 1_800_000_000
        #expect(try Invitation.parse(link, now: now).url() == link)
        var refused = 0
        for _ in 0..<3_000 {
            var bytes = Array(link.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &random) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[at] = UInt8.random(in: .min ... .max, using: &random)
                case 1: bytes.removeSubrange(at...)
                case 2: bytes.insert(contentsOf: Array("-9223372036854775808".utf8), at: at)
                default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 32)], at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            for clock in [Int64.min, now, Int64.max] {
                if (try? Invitation.parse(text, now: clock)) == nil { refused += 1 }
            }
        }
        #expect(refused > 0)
    }
}

private struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
