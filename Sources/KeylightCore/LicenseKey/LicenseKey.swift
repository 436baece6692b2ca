import Crypto
import Foundation

/// A license key.
///
/// Keys minted here are `PREFIX-XXXX-XXXX-XXXX-XXXX`: the product's 2–8 upper-case alphanumerics,
/// then four groups carrying 80 random bits in Crockford base-32. Keys imported from the hosted
/// service (protocol 6.1) may be any 8–64 of `A-Z 0-9 -`; both are looked up by the same hash.
/// A `LicenseKey` value always holds a normalised key of one of the two forms.
///
/// `description` is the masked form, so a key interpolated into a log line does not leak;
/// use ``text`` where the full key is meant to be shown (once, to its owner).
public struct LicenseKey: Hashable, Sendable, CustomStringConvertible {
    /// The normalised key.
    public let text: String

    /// Parses `input` after normalisation (trim white space, upper-case): a minted or an imported key.
    public init(_ input: String) throws(LicenseKeyError) {
        let normalised = Self.normalize(input)
        guard Self.isMinted(normalised) || Self.isImportable(normalised) else { throw .invalidFormat }
        self.text = normalised
    }

    private init(validated text: String) { self.text = text }

    /// True when the key has the minted form `PREFIX-XXXX-XXXX-XXXX-XXXX` (false for an imported key).
    public var isMintedFormat: Bool { Self.isMinted(text) }

    /// The text before the first `-` (for a minted key, the product prefix, for example `ACME`).
    public var prefix: String { String(text.prefix { $0 != "-" }) }

    /// True when the key starts with the product prefix `prefix`: minted keys as `PREFIX-…`,
    /// imported keys as the hosted service wrote them, which starts with the prefix.
    public func hasProductPrefix(_ prefix: String) -> Bool {
        isMintedFormat ? self.prefix == prefix : text.hasPrefix(prefix)
    }

    /// Lower-case hex SHA-256 of the key's UTF-8 bytes: the only form the server stores.
    public var keyHash: String { Self.hash(normalized: text) }

    /// `ACME-····-····-····-7B2D`: enough to recognise a key, not enough to use it. An imported key
    /// shows at most 4 characters of its first segment and its last 4 (fewer below 16 characters,
    /// never more than half the key): `ACME-····-7B2D`.
    public var masked: String {
        let hidden = String(repeating: "\u{00B7}", count: Self.groupLength)
        if isMintedFormat {
            let groups = text.split(separator: "-")
            return ([String(groups[0])] + Array(repeating: hidden, count: Self.groupCount - 1) + [String(groups[Self.groupCount])])
                .joined(separator: "-")
        }
        // Head and tail together never show more than half of the key (imported keys have at least 8 characters).
        let shown = min(4, text.count / 4)
        let head = text.prefix { $0 != "-" }.prefix(shown)
        return "\(head)-\(hidden)-\(text.suffix(shown))"
    }

    /// As ``masked``, keeping the whole of the product's `prefix`: the prefix is on every key of
    /// the product, so it tells nothing, and an imported key reads as its own (`NOTES-····-0001`
    /// for `NOTES-PRO0-0000-0001`, not `NOTE-····-0001`). The tail shown is at most a third of
    /// what follows the prefix, and at most 4 characters.
    public func masked(keepingPrefix prefix: String) -> String {
        guard !isMintedFormat, !prefix.isEmpty, text.hasPrefix(prefix + "-") else { return masked }
        let rest = text.dropFirst(prefix.count + 1)
        let shown = min(4, rest.filter { $0 != "-" }.count / 3)
        return "\(prefix)-\(String(repeating: "\u{00B7}", count: Self.groupLength))-\(rest.suffix(shown))"
    }

    public var description: String { masked }

    /// A new key for `prefix` from 80 bits of `generator`, which must be cryptographically
    /// secure in production (the default, `SystemRandomNumberGenerator`, is).
    public static func generate(
        prefix: String,
        using generator: inout some RandomNumberGenerator
    ) throws(LicenseKeyError) -> LicenseKey {
        guard isValidPrefix(prefix) else { throw .invalidPrefix }
        var random = [UInt8](repeating: 0, count: randomBytes)
        for index in random.indices { random[index] = generator.next() }
        let body = CrockfordBase32.encode(random)
        var text = prefix
        for group in 0..<groupCount {
            text += "-" + String(decoding: body[(group * groupLength)..<((group + 1) * groupLength)], as: UTF8.self)
        }
        return LicenseKey(validated: text)
    }

    /// A new key for `prefix` from the system's CSPRNG.
    public static func generate(prefix: String) throws(LicenseKeyError) -> LicenseKey {
        var generator = SystemRandomNumberGenerator()
        return try generate(prefix: prefix, using: &generator)
    }

    /// Trims white space and upper-cases: the normalisation applied before any lookup or hash.
    public static func normalize(_ input: String) -> String {
        // ASCII, the case of every real key, without the Unicode tables Foundation consults.
        var bytes = Array(input.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return input.trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        while let last = bytes.last, isSpace(last) { bytes.removeLast() }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.endIndex
        var out = Array(bytes[start...])
        for index in out.indices where (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(out[index]) {
            out[index] -= 0x20
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `keyHash` of any text after normalisation, well-formed or not.
    public static func hash(normalizing input: String) -> String {
        hash(normalized: normalize(input))
    }

    /// True when `input`, once normalised, is a well-formed key (minted or imported).
    public static func isValid(_ input: String) -> Bool {
        (try? LicenseKey(input)) != nil
    }

    /// True for 2–8 upper-case ASCII letters or digits.
    public static func isValidPrefix(_ prefix: String) -> Bool {
        let bytes = Array(prefix.utf8)
        return prefixLengths.contains(bytes.count) && bytes.allSatisfy(isUpperAlphanumeric)
    }

    /// True when `input`, once normalised, is a key an admin may import for a product whose prefix
    /// is `prefix`: 8–64 of `A-Z 0-9 -` that the SDK takes for this product (``hasProductPrefix(_:)``).
    public static func isImportable(_ input: String, prefix: String) -> Bool {
        let normalised = normalize(input)
        return isImportable(normalised) && LicenseKey(validated: normalised).hasProductPrefix(prefix)
    }

    /// Product prefixes (protocol 6.1; the first revision had exactly 4).
    public static let prefixLengths = 2...8
    /// Imported keys (protocol 6.1).
    public static let importedLengths = 8...64
    static let groupCount = 4
    static let groupLength = 4
    static let randomBytes = 10  // 80 bits = 16 characters of 5 bits
    /// The four `-XXXX` groups after the prefix.
    static let groupsLength = groupCount * (groupLength + 1)

    private static func isUpperAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func isMinted(_ normalised: String) -> Bool {
        let bytes = Array(normalised.utf8)
        let prefixLength = bytes.count - groupsLength
        guard prefixLengths.contains(prefixLength), bytes[0..<prefixLength].allSatisfy(isUpperAlphanumeric) else {
            return false
        }
        for group in 0..<groupCount {
            let dash = prefixLength + group * (groupLength + 1)
            guard bytes[dash] == UInt8(ascii: "-") else { return false }
            for index in (dash + 1)...(dash + groupLength) where !CrockfordBase32.contains(bytes[index]) {
                return false
            }
        }
        return true
    }

    private static func isImportable(_ normalised: String) -> Bool {
        let bytes = normalised.utf8
        return importedLengths.contains(bytes.count) && bytes.allSatisfy { isUpperAlphanumeric($0) || $0 == UInt8(ascii: "-") }
    }

    private static func hash(normalized: String) -> String {
        Hex.encode(SHA256.hash(data: Array(normalized.utf8)))
    }
}

/// Why text is not a license key.
public struct LicenseKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    /// Neither a minted key nor an importable one.
    public static let invalidFormat = Self(description: "license key is neither PREFIX-XXXX-XXXX-XXXX-XXXX (Crockford base-32) nor an imported key of 8-64 characters A-Z 0-9 -")
    /// The prefix is not 2–8 upper-case ASCII letters or digits.
    public static let invalidPrefix = Self(description: "key prefix must be 2-8 upper-case letters or digits")
}
