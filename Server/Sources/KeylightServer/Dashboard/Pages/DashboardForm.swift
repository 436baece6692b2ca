import Foundation
import Hummingbird
import KeylightCore
import NIOCore

/// A posted `application/x-www-form-urlencoded` body, read once with a size bound and decoded
/// into a route's own `Decodable` form type with Hummingbird's `URLEncodedFormDecoder`.
struct DashboardForm: Sendable {
    static let maxBytes = 64 * 1024
    let body: String

    /// Reads the body (replacing the request's stream with the bytes read, so it is read once).
    static func read(_ request: inout Request) async throws -> DashboardForm {
        do {
            return DashboardForm(body: String(buffer: try await request.collectBody(upTo: maxBytes)))
        } catch {
            throw DashboardRefusal.formTooLarge
        }
    }

    /// The form as `Form`, strictly: a field `Form` does not read (other than the CSRF token) is
    /// 400 `UNKNOWN_FIELD`, naming it.
    func decode<Form: Decodable>(_ type: Form.Type) throws -> Form {
        do {
            return try URLEncodedFormDecoder().decode(StrictForm<Form>.self, from: body).value
        } catch let error as StrictDecoding.UnknownField {
            throw DashboardRefusal.unknownField(error.path)
        } catch {
            throw DashboardRefusal.unreadableForm
        }
    }

    /// Lets the form decoder hand over its `Decoder`.
    private struct StrictForm<Value: Decodable>: Decodable {
        let value: Value
        init(from decoder: any Decoder) throws {
            value = try StrictDecoding.decode(Value.self, from: decoder, allowed: ["_csrf"])
        }
    }

    /// Whether the form's `_csrf` field is `expected` (compared in constant time).
    func csrfMatches(_ expected: String) throws -> Bool {
        // Read on its own, beside whatever fields the form has (they are checked when it is decoded).
        let field: CSRFField
        do {
            field = try URLEncodedFormDecoder().decode(CSRFField.self, from: body)
        } catch {
            throw DashboardRefusal.unreadableForm
        }
        guard let token = field.token, !expected.isEmpty else { return false }
        return ConstantTime.equals(Array(token.utf8), Array(expected.utf8))
    }

    private struct CSRFField: Decodable {
        var token: String?
        enum CodingKeys: String, CodingKey { case token = "_csrf" }
    }

    /// A whole number typed into a field, or nil when the field was left blank.
    static func wholeNumber(_ text: String?, label: String) throws(APIError) -> Int? {
        guard let text else { return nil }
        guard let value = Int(text) else { throw .invalidRequest("\(label) must be a whole number.") }
        return value
    }
}

/// A text field as the dashboard reads it: trimmed, and blank is the same as absent.
@propertyWrapper
struct FormText: Decodable, Sendable {
    var wrappedValue: String?

    init(wrappedValue: String?) {
        self.wrappedValue = wrappedValue
    }

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self).trimmingCharacters(in: .whitespacesAndNewlines)
        wrappedValue = text.isEmpty ? nil : text
    }
}

/// A checkbox: browsers send a ticked box (as "on") and leave an unticked one out.
@propertyWrapper
struct FormCheckbox: Decodable, Sendable {
    var wrappedValue: Bool

    init(wrappedValue: Bool) {
        self.wrappedValue = wrappedValue
    }

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(String.self).trimmingCharacters(in: .whitespaces).lowercased()
        wrappedValue = !value.isEmpty && value != "off" && value != "false" && value != "0"
    }
}

/// A list of ticked boxes sharing a name (`events[]`), blanks dropped.
@propertyWrapper
struct FormList: Decodable, Sendable {
    var wrappedValue: [String]

    init(wrappedValue: [String]) {
        self.wrappedValue = wrappedValue
    }

    init(from decoder: any Decoder) throws {
        wrappedValue = try [String](from: decoder).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }
}

// Synthesized decoding requires every wrapped key; a form leaves fields out, so an absent
// field decodes as the wrapper's empty value.
extension KeyedDecodingContainer {
    func decode(_ type: FormText.Type, forKey key: Key) throws -> FormText {
        try decodeIfPresent(type, forKey: key) ?? FormText(wrappedValue: nil)
    }

    func decode(_ type: FormCheckbox.Type, forKey key: Key) throws -> FormCheckbox {
        try decodeIfPresent(type, forKey: key) ?? FormCheckbox(wrappedValue: false)
    }

    func decode(_ type: FormList.Type, forKey key: Key) throws -> FormList {
        try decodeIfPresent(type, forKey: key) ?? FormList(wrappedValue: [])
    }
}
