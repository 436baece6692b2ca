import Foundation
import KeylightCore

/// Field checks shared by every request body: lengths, characters, and the error each gives.
enum Field {
    /// `text` cut at the last whole Unicode scalar within `maxBytes` of UTF-8.
    static func cut(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var scalars = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            guard bytes + size <= maxBytes else { break }
            scalars.append(scalar)
            bytes += size
        }
        return String(scalars)
    }

    static func required(_ value: String?, _ name: String, max: Int) throws(APIError) -> String {
        guard let value, !value.isEmpty else { throw .invalidRequest("Missing field \(name).") }
        return try optional(value, name, max: max)!
    }

    static func optional(_ value: String?, _ name: String, max: Int) throws(APIError) -> String? {
        guard let value else { return nil }
        guard value.utf8.count <= max else { throw .invalidRequest("Field \(name) is longer than \(max) bytes.") }
        // Control characters (C0, DEL, C1) have no business in identifiers or names and break logs.
        guard !containsControlCharacter(value) else {
            throw .invalidRequest("Field \(name) contains control characters.")
        }
        return value
    }

    /// Byte-level scan: C0 and DEL are single bytes; C1 (U+0080–U+009F) is 0xC2 followed by 0x80–0x9F.
    static func containsControlCharacter(_ value: String) -> Bool {
        var previous: UInt8 = 0
        for byte in value.utf8 {
            if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && (0x80...0x9F).contains(byte)) { return true }
            previous = byte
        }
        return false
    }

    /// A license key, normalised; a malformed key is a 400, as documented.
    static func licenseKey(_ value: String?) throws(APIError) -> LicenseKey {
        let text = try required(value, "license_key", max: 64)
        guard let key = try? LicenseKey(text) else { throw .invalidRequest("Field license_key is not a valid license key.") }
        return key
    }

    /// Ids that end up in leases and URLs: 1-64 of `A-Z a-z 0-9 - _ .`.
    static func identifier(_ value: String?, _ name: String) throws(APIError) -> String {
        try checkedIdentifier(try required(value, name, max: 64), name)
    }

    /// ``identifier(_:_:)`` for a field that may be absent (nil when it is).
    static func optionalIdentifier(_ value: String?, _ name: String) throws(APIError) -> String? {
        guard let text = try optional(value, name, max: 64) else { return nil }
        return try checkedIdentifier(text, name)
    }

    private static func checkedIdentifier(_ text: String, _ name: String) throws(APIError) -> String {
        guard !text.isEmpty, text.utf8.allSatisfy(isIdentifierByte) else {
            throw .invalidRequest("Field \(name) must be 1-64 characters of A-Z a-z 0-9 - _ .")
        }
        return text
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }
}

/// Decodes a JSON body into `T`, turning every decoding failure into a 400 that names the field.
func decodeBody<T: Decodable>(_ type: T.Type, from bytes: some DataProtocol) throws(APIError) -> T {
    try decodeJSONBody(T.self, from: bytes)
}

/// `bytes` through `JSONDecoder`, its errors as ``APIError/decoding(_:)`` renders them.
func decodeJSONBody<T: Decodable>(_ type: T.Type, from bytes: some DataProtocol) throws(APIError) -> T {
    do {
        return try JSONDecoder().decode(T.self, from: Data(bytes))
    } catch {
        throw APIError.decoding(error)
    }
}

extension APIError {
    /// A decoding failure as the 400 that names the field.
    static func decoding(_ error: any Error) -> APIError {
        switch error {
        case let DecodingError.keyNotFound(key, _):
            return .invalidRequest("Missing field \(key.stringValue).")
        case let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context):
            let field = RecordingDecoder.path(context.codingPath)
            return .invalidRequest(field.isEmpty ? "Request body must be a JSON object." : "Field \(field) has the wrong type.")
        default:
            return .invalidRequest("Request body is not valid JSON.")
        }
    }
}

/// The action's own fields; the telemetry every action may carry is ``Telemetry``, read from
/// the same body through ``SDKBody``.
struct ActivateRequest: Decodable {
    var license_key: String?
    var instance_name: String?
    var machine_hash: String?
    var free_tier_instance_id: String?
    /// Keylight addition: an instance the app already holds, re-activated without a new slot.
    var instance_id: String?
}

struct ValidateRequest: Decodable {
    var license_key: String?
    var instance_id: String?
    var machine_hash: String?
}

struct DeactivateRequest: Decodable {
    var license_key: String?
    var instance_id: String?
}

struct KeylessRequest: Decodable {
    /// `expired`: a trial that ran out (protocol 6.1, as the hosted service's clients report it).
    static let states: Set<String> = ["trial", "free_tier", "expired"]
    var instance_id: String?
    var state: String?
    var machine_hash: String?
}

struct InstancesRequest: Decodable {
    var license_key: String?
}

struct OfflineActivateRequest: Decodable {
    var license_key: String?
    /// The request file's text, as the device showed it.
    var request: String?
}

struct OfflineDeactivateRequest: Decodable {
    var license_key: String?
    /// The deactivation proof's text.
    var proof: String?
}

/// `lost-key` (protocol 6.9): the address the buyer paid with.
struct LostKeyRequest: Decodable {
    var email: String?
}

extension Field {
    /// The address of a lost-key request, read as the portal's form reads it: spaces around it
    /// trimmed, lower-cased (as licenses store it), and one a mail can be sent to
    /// (``MailAddress``); otherwise a 400 that names `email`.
    static func lostKeyEmail(_ value: String?) throws(APIError) -> String {
        guard let trimmed = value?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty,
              let email = try email(trimmed, "email") else { throw .invalidRequest("Missing field email.") }
        guard (try? MailAddress(email)) != nil else { throw .invalidRequest("Field email is not an email address.") }
        return email
    }

    /// The text of an offline file: present, and no larger than any such file can be (its own
    /// parser checks the rest, and names what is wrong).
    static func offlineFile(_ value: String?, _ name: String) throws(APIError) -> String {
        guard let value, !value.isEmpty else { throw .invalidRequest("Missing field \(name).") }
        guard value.utf8.count <= ArmoredText.maxBytes else { throw .invalidRequest("Field \(name) is longer than \(ArmoredText.maxBytes) bytes.") }
        return value
    }
}
