import Crypto
import Foundation

/// Checks shared by the offline files' fields: everything in them came from outside.
enum OfflineFields {
    /// Unix seconds a file may carry: not negative, and far from overflowing any sum made with them.
    static let timeRange: ClosedRange<Int64> = 0...(1 << 40)

    static func decode<T: Decodable>(_ type: T.Type, from payload: Data) throws(OfflineFileError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: payload)
        } catch let DecodingError.keyNotFound(key, _) {
            throw .badField(key.stringValue, "is missing")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            guard let field = context.codingPath.first?.stringValue else { throw .notJSON }
            throw .badField(field, "has the wrong type")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw .badField(context.codingPath.map(\.stringValue).joined(separator: "."), "is out of range")
        } catch {
            throw .notJSON
        }
    }

    static func version(_ value: Int) throws(OfflineFileError) {
        guard value == 1 else { throw .unsupportedVersion(value) }
    }

    /// Text of 1...`max` UTF-8 bytes with no control characters.
    static func text(_ value: String, _ name: String, max: Int) throws(OfflineFileError) -> String {
        guard !value.isEmpty else { throw .badField(name, "is empty") }
        guard value.utf8.count <= max else { throw .badField(name, "is longer than \(max) bytes") }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .badField(name, "contains control characters")
        }
        return value
    }

    /// An id as the protocol's instance ids are: 1-64 of `A-Z a-z 0-9 - _ .` (tenant and product
    /// ids, narrower, are matched against the route's by the server).
    static func identifier(_ value: String, _ name: String) throws(OfflineFileError) -> String {
        let allowed = value.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard (1...64).contains(value.utf8.count), allowed else { throw .badField(name, "is not an id of 1-64 characters A-Z a-z 0-9 - _ .") }
        return value
    }

    static func time(_ value: Int64, _ name: String) throws(OfflineFileError) -> Int64 {
        guard timeRange.contains(value) else { throw .badField(name, "is not a Unix time") }
        return value
    }

    static func publicKey(_ value: String, _ name: String) throws(OfflineFileError) -> Curve25519.Signing.PublicKey {
        guard value.utf8.count <= 64, let raw = Base64.decode(value), raw.count == 32,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
            throw .badField(name, "is not a base64 Ed25519 public key")
        }
        return key
    }

    static func signature(_ value: String, _ name: String) throws(OfflineFileError) -> Data {
        guard value.utf8.count <= 128, let raw = Base64.decode(value), raw.count == 64 else {
            throw .badField(name, "is not a base64 Ed25519 signature")
        }
        return raw
    }

    static func json(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and integers only: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data()
    }
}
