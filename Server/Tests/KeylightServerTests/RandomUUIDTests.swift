import Foundation
@testable import KeylightServer
import KeylightTestSupport
import Testing

@Suite struct RandomUUIDTests {
    /// The generator's two words, as the bytes of a version 4 UUID, formatted by Foundation.
    private static func foundationText(_ high: UInt64, _ low: UInt64) -> String {
        let high = high & ~0xF000 | 0x4000
        let low = low & ~(0xC000_0000_0000_0000 as UInt64) | 0x8000_0000_0000_0000
        let bytes = withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Array($0) }
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return uuid.uuidString.lowercased()
    }

    @Test func readsAsFoundationWritesTheSameBytes() {
        var ours = SeededGenerator(seed: 39)
        var theirs = SeededGenerator(seed: 39)
        for _ in 0..<2_000 {
            let text = RandomUUID.lowercaseString(using: &ours)
            let expected = Self.foundationText(theirs.next(), theirs.next())
            #expect(text == expected)
            // A version 4, RFC 4122 UUID that Foundation reads back to the same value.
            #expect(UUID(uuidString: text)?.uuidString.lowercased() == text)
            let characters = Array(text)
            #expect(characters.count == 36 && characters[14] == "4" && "89ab".contains(characters[19]))
        }
    }

    /// The compact form (event, webhook, token and release ids) is the same UUID without its dashes.
    @Test func compactFormIsTheUUIDWithoutDashes() {
        var dashed = SeededGenerator(seed: 52)
        var compact = SeededGenerator(seed: 52)
        for _ in 0..<2_000 {
            let full = RandomUUID.lowercaseString(using: &dashed)
            let text = RandomUUID.lowercaseString(using: &compact, dashes: false)
            #expect(text == full.replacingOccurrences(of: "-", with: ""))
            let characters = Array(text)
            #expect(characters.count == 32 && characters[12] == "4" && "89ab".contains(characters[16]))
            #expect(text.allSatisfy { "0123456789abcdef".contains($0) })
        }
        let values = (0..<10_000).map { _ in RandomUUID.compactLowercaseString() }
        #expect(Set(values).count == values.count)
        #expect(values.allSatisfy { $0.utf8.count == 32 })
    }

    @Test func systemValuesDiffer() {
        let values = (0..<10_000).map { _ in RandomUUID.lowercaseString() }
        #expect(Set(values).count == values.count)
        #expect(values.allSatisfy { UUID(uuidString: $0) != nil && $0 == $0.lowercased() })
    }
}
