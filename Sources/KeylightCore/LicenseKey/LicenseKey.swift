import Crypto
import Foundation

/// A license key: `PREFIX-XXXX-XXXX-XXXX-XXXX`.
///
/// The prefix is the product's four upper-case alphanumerics; the four groups carry 80 random
/// bits in Crockford base-32. A `LicenseKey` value always holds a normalised, well-formed key.
///
/// `description` is the masked form, so a key interpolated into a log line does not leak;
/// use ``text`` where the full key is meant to be shown (once, to its owner).
public struct LicenseKey: Hashable, Sendable, CustomStringConvertible {
    /// The normalised key.
    public let text: String

    /// Parses `input` after normalisation (trim white space, upper-case).
    public init(_ input: String) throws(LicenseKeyError) {
        let normalised = Self.normalize(input)
        guard Self.isWellFormed(normalised) else { throw .invalidFormat }
        self.text = normalised
    }

    private init(validated text: String) { self.text = text }

    /// The product prefix, for example `ACME`.
    public var prefix: String { String(text.prefix(Self.prefixLength)) }

    /// Lower-case hex SHA-256 of the key's UTF-8 bytes: the only form the server stores.
    public var keyHash: String { Self.hash(normalized: text) }

    /// `ACME-····-····-····-7B2D`: enough to recognise a key, not enough to use it.
    public var masked: String {
        let hidden = String(repeating: "\u{00B7}", count: Self.groupLength)
        let groups = text.split(separator: "-")
        return ([String(groups[0])] + Array(repeating: hidden, count: Self.groupCount - 1) + [String(groups[Self.groupCount])])
            .joined(separator: "-")
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

    /// True when `input`, once normalised, is a well-formed key.
    public static func isValid(_ input: String) -> Bool {
        isWellFormed(normalize(input))
    }

    /// True for four upper-case ASCII letters or digits.
    public static func isValidPrefix(_ prefix: String) -> Bool {
        let bytes = Array(prefix.utf8)
        return bytes.count == prefixLength && bytes.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }

    static let prefixLength = 4
    static let groupCount = 4
    static let groupLength = 4
    static let randomBytes = 10  // 80 bits = 16 characters of 5 bits
    /// `PREFIX` + four `-XXXX` groups.
    public static let length = prefixLength + groupCount * (groupLength + 1)

    private static func isWellFormed(_ normalised: String) -> Bool {
        let bytes = Array(normalised.utf8)
        guard bytes.count == length, isValidPrefix(String(decoding: bytes[0..<prefixLength], as: UTF8.self)) else {
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

    private static func hash(normalized: String) -> String {
        Hex.encode(SHA256.hash(data: Array(normalized.utf8)))
    }
}

/// Why text is not a license key.
public struct LicenseKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    /// Not `PREFIX-XXXX-XXXX-XXXX-XXXX` in the Crockford alphabet.
    public static let invalidFormat = Self(description: "license key is not of the form PREFIX-XXXX-XXXX-XXXX-XXXX (Crockford base-32)")
    /// The prefix is not four upper-case ASCII letters or digits.
    public static let invalidPrefix = Self(description: "key prefix must be 4 upper-case letters or digits")
}
