import Foundation
@testable import KeylightCore
import KeylightTestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct LicenseKeyTests {
    static let crockford = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test func generatedKeysHaveTheDocumentedShape() throws {
        for _ in 0..<500 {
            let key = try LicenseKey.generate(prefix: "ACME")
            let groups = key.text.split(separator: "-", omittingEmptySubsequences: false)
            #expect(groups.count == 5)
            #expect(groups[0] == "ACME")
            for group in groups.dropFirst() {
                #expect(group.count == 4)
                #expect(group.allSatisfy { Self.crockford.contains($0) })
            }
            #expect(LicenseKey.isValid(key.text))
        }
    }

    @Test func encodingCarriesEightyBitsBigEndian() throws {
        var zeros = ScriptedGenerator(bytes: [0x00])
        #expect(try LicenseKey.generate(prefix: "ACME", using: &zeros).text == "ACME-0000-0000-0000-0000")
        var ones = ScriptedGenerator(bytes: [0xFF])
        #expect(try LicenseKey.generate(prefix: "ACME", using: &ones).text == "ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ")
        // 0x08 = 00001 000|00...: first character 1, then zeros; the last byte 0x01 ends in "...01".
        var pattern = ScriptedGenerator(bytes: [0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0])
        #expect(try LicenseKey.generate(prefix: "ACME", using: &pattern).text == "ACME-1000-0000-0000-0001")
    }

    @Test func everyAlphabetCharacterAppearsAndKeysDoNotRepeat() throws {
        var generator = SeededGenerator(seed: 42)
        var seen = Set<Character>()
        var keys = Set<String>()
        for _ in 0..<2_000 {
            let key = try LicenseKey.generate(prefix: "AB12", using: &generator)
            keys.insert(key.text)
            seen.formUnion(key.text.dropFirst(5).filter { $0 != "-" })
        }
        #expect(seen == Self.crockford)
        #expect(keys.count == 2_000)
    }

    @Test func seededGenerationIsDeterministic() throws {
        var first = SeededGenerator(seed: 7)
        var second = SeededGenerator(seed: 7)
        #expect(try LicenseKey.generate(prefix: "ACME", using: &first) == LicenseKey.generate(prefix: "ACME", using: &second))
    }

    @Test(arguments: ["acme", "A", "ACMEACMEA", "AC-E", "ÄCME", ""])
    func badPrefixesAreRefused(prefix: String) {
        #expect(throws: LicenseKeyError.invalidPrefix) { try LicenseKey.generate(prefix: prefix) }
    }

    /// Protocol 6.1: product prefixes of 2 to 8 characters mint keys of the same shape.
    @Test(arguments: ["AC", "ACM", "ACME", "ACME2026"])
    func prefixesOfTwoToEightCharactersMint(prefix: String) throws {
        let key = try LicenseKey.generate(prefix: prefix)
        #expect(key.text.count == prefix.count + 20 && key.isMintedFormat)
        #expect(key.prefix == prefix && key.hasProductPrefix(prefix) && !key.hasProductPrefix(prefix + "X"))
        #expect(try LicenseKey(key.text.lowercased()) == key)
    }

    @Test func normalisationTrimsAndUppercases() throws {
        let key = try LicenseKey("  acme-ab12-cd34-ef56-gh78 \n")
        #expect(key.text == "ACME-AB12-CD34-EF56-GH78")
        #expect(LicenseKey.normalize("\tacme-x ") == "ACME-X")
    }

    /// Not minted keys, but 8-64 of `A-Z 0-9 -`: keys imported from the hosted service (protocol 6.1).
    @Test(arguments: [
        "ACME-AB12-CD34-EF56",  // three groups
        "ACME-AB12-CD34-EF56-GH789",  // a long group
        "ACME-AB12-CD34-EF56-GHI8",  // I is not Crockford
        "ACME-AB12-CD34-EF56-GHO8",  // O
        "ACMEAB12-CD34-EF56-GH78-",  // dash misplaced
        "ACME-HOSTED-KEY-0001",
        "ACMEKEY1",  // 8 characters
    ])
    func hostedFormatKeysParseAsImported(text: String) throws {
        let key = try LicenseKey(text)
        #expect(!key.isMintedFormat && key.text == text && LicenseKey.isValid(text))
        #expect(key.hasProductPrefix("ACME") && !key.hasProductPrefix("ACMF"))
        #expect(LicenseKey.isImportable(text.lowercased(), prefix: "ACME") && !LicenseKey.isImportable(text, prefix: "NOPE"))

        // Never more than half of the key is shown.
        let shown = key.masked.filter { $0 != "\u{00B7}" && $0 != "-" }.count
        #expect(shown * 2 <= text.filter { $0 != "-" }.count, "\(key.masked)")
        #expect(key.masked.hasSuffix(String(text.suffix(text.count >= 16 ? 4 : text.count / 4))))

        // Kept with the product's prefix: the prefix whole, and at most a third of the rest.
        let kept = key.masked(keepingPrefix: "ACME")
        if text.hasPrefix("ACME-") {
            #expect(kept.hasPrefix("ACME-\u{00B7}"))
            let restShown = kept.dropFirst(5).filter { $0 != "\u{00B7}" && $0 != "-" }.count
            #expect(restShown * 3 <= text.dropFirst(5).filter { $0 != "-" }.count, "\(kept)")
        } else {
            #expect(kept == key.masked)
        }
    }

    /// The hosted service's demo keys keep their own prefix (`NOTE-····-0001` was the bug).
    @Test func anImportedKeyKeepsItsProductsWholePrefix() throws {
        #expect(try LicenseKey("NOTES-PRO0-0000-0001").masked(keepingPrefix: "NOTES") == "NOTES-\u{00B7}\u{00B7}\u{00B7}\u{00B7}-0001")
        #expect(try LicenseKey("NOTES-REVK-0000-0002").masked(keepingPrefix: "NOTES").hasSuffix("-0002"))
        // Another product's prefix, or a minted key: as `masked`.
        #expect(try LicenseKey("NOTES-PRO0-0000-0001").masked(keepingPrefix: "ACME") == LicenseKey("NOTES-PRO0-0000-0001").masked)
        let minted = try LicenseKey.generate(prefix: "NOTES")
        #expect(minted.masked(keepingPrefix: "NOTES") == minted.masked && minted.masked.hasPrefix("NOTES-"))
    }

    /// The server imports only keys the SDK will take for the product: a minted-shape key with a
    /// longer prefix is another product's, even though its text starts with this prefix.
    @Test func importAndTheSDKAgreeOnThePrefix() throws {
        let other = try LicenseKey.generate(prefix: "ACME")
        #expect(!other.hasProductPrefix("AC") && !LicenseKey.isImportable(other.text, prefix: "AC"))
        #expect(LicenseKey.isImportable(other.text, prefix: "ACME"))
    }

    @Test(arguments: [
        "ACME_AB12-CD34-EF56-GH78",  // underscore
        "ACME-AB12-CD34-EF56-GH7\u{0}",
        "ACME-AB12-CD34-EF56-GH7Ø",
        "ACME AB12 CD34 EF56 GH78",  // inner spaces
        "ACME-12",  // 7 characters
        "ACME-" + String(repeating: "0", count: 60),  // 65 characters
        "",
    ])
    func malformedKeysAreRefused(text: String) {
        #expect(throws: LicenseKeyError.invalidFormat) { try LicenseKey(text) }
        #expect(!LicenseKey.isValid(text))
    }

    @Test func keyHashIsHexSha256OfTheNormalisedKey() throws {
        let key = try LicenseKey(" acme-ab12-cd34-ef56-gh78")
        // python3 -c 'import hashlib;print(hashlib.sha256(b"ACME-AB12-CD34-EF56-GH78").hexdigest())'
        #expect(key.keyHash == "80fe6596d23513de075112124e0e84824ee87d6dd817a2cc2f59fd124b1356fa")
        #expect(key.keyHash == LicenseKey.hash(normalizing: "acme-ab12-cd34-ef56-gh78  "))
        #expect(Hex.isLowerHex(key.keyHash, count: 64))
    }

    @Test func maskingKeepsPrefixAndLastGroup() throws {
        let key = try LicenseKey("ACME-AB12-CD34-EF56-7B2D")
        #expect(key.masked == "ACME-····-····-····-7B2D")
        #expect("\(key)" == key.masked)
        #expect(!"\(key)".contains("AB12"))
    }
}

@Suite(.timeLimit(.minutes(3))) struct NormalisationTests {
    @Test(arguments: [
        " acme-ab12-cd34-ef56-gh78 ", "\tACME-AB12-CD34-EF56-GH78\r\n", "acme-ab12-cd34-ef56-gh78\u{0B}\u{0C}", "", "   ",
        "\u{00A0}acme-ab12-cd34-ef56-gh78\u{2003}", "ｱcme", "straße-x",
    ])
    func asciiFastPathAgreesWithFoundation(input: String) {
        #expect(LicenseKey.normalize(input) == input.trimmingCharacters(in: .whitespacesAndNewlines).uppercased())
    }
}
