import Crypto
import Foundation
@testable import KeylightCore
import KeylightTestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct EncodingTests {
    @Test func base64AcceptsBothAlphabetsPaddedOrNot() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x01]
        #expect(Base64.encode(bytes) == "+/+/AAE=")
        #expect(Base64.encodeURLSafe(bytes) == "-_-_AAE")
        for text in ["+/+/AAE=", "+/+/AAE", "-_-_AAE=", "-_-_AAE"] {
            #expect(Base64.decode(text).map(Array.init) == bytes, "\(text)")
        }
    }

    @Test(arguments: ["A", "AAAAA", "AA AA", "AA\nAA", "AA*A", "===="])
    func base64RefusesGarbage(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func hexRoundTrips() {
        let bytes: [UInt8] = [0x00, 0x7F, 0x80, 0xFF, 0x1A]
        #expect(Hex.encode(bytes) == "007f80ff1a")
        #expect(Hex.decode("007F80ff1A") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.isLowerHex("00ff", count: 4))
        #expect(!Hex.isLowerHex("00FF", count: 4))
        #expect(!Hex.isLowerHex("00ff", count: 5))
    }

    @Test func hexOfADigestIsHexOfItsBytes() {
        // The digest path reads the digest's bytes in place; the sequence path copies them.
        let digest = SHA256.hash(data: Array("abc".utf8))
        #expect(Hex.encode(digest) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(digest) == Hex.encode(Array(digest)))
        #expect(Hex.encode([UInt8]()) == "" && Hex.encode(Data([0xAB])) == "ab")
        // A sequence without contiguous storage takes the copying path.
        #expect(Hex.encode(stride(from: UInt8(0), through: 0x30, by: 0x10)) == "00102030")
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        #expect(!ConstantTime.equals([0, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(ConstantTime.equals([] as [UInt8], [] as [UInt8]))
        #expect(ConstantTime.equals("secret", "secret"))
        #expect(!ConstantTime.equals("secret", "secreT"))
        // Every differing bit position is seen, not just the first byte.
        for bit in 0..<8 {
            let a = [UInt8](repeating: 0, count: 32)
            var b = a
            b[31] = 1 << bit
            #expect(!ConstantTime.equals(a, b))
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct Base64PaddingTests {
    @Test(arguments: ["QQ==", "QQ", "QUI=", "QUI", "QUJD"])
    func correctPaddingOrNoneDecodes(text: String) {
        #expect(Base64.decode(text) != nil)
    }

    @Test(arguments: ["QQ=", "QUI==", "QUJD=", "Q===", "QQ==="])
    func wrongPaddingIsRefused(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}

@Suite(.timeLimit(.minutes(3))) struct RandomBytesTests {
    @Test func fillsExactCountsFromWholeDraws() {
        var generator = SeededGenerator(seed: 1)
        for count in [0, 1, 7, 8, 9, 16, 33] {
            #expect(generator.bytes(count).count == count)
        }
        var a = SeededGenerator(seed: 9)
        var b = SeededGenerator(seed: 9)
        let word = b.next()
        #expect(a.bytes(8) == (0..<8).map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) })
        var system = SystemRandomNumberGenerator()
        #expect(system.bytes(16) != system.bytes(16))
    }
}
