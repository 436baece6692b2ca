import Foundation

/// A mailbox: an address and an optional display name, checked so that nothing a buyer, a
/// payment provider or a tenant typed can end a header line or start another.
public struct MailAddress: Sendable, Hashable {
    public let address: String
    public let displayName: String?

    /// Why a mailbox was refused.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// `address` as `local@domain` (ASCII local part, no spaces or brackets, at most 254 bytes);
    /// `displayName` any text without control characters (at most 200 bytes). CR and LF are
    /// refused everywhere: they are how a header is injected.
    public init(_ address: String, displayName: String? = nil) throws(Invalid) {
        guard !Self.hasLineBreakOrControl(address) else { throw Invalid(description: "the address contains a line break or control character") }
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard address.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[1].contains("."),
              address.unicodeScalars.allSatisfy({ $0.isASCII && !" <>()[],;:\\\"".unicodeScalars.contains($0) }) else {
            throw Invalid(description: "\(address.prefix(80)) is not an email address")
        }
        if let displayName {
            guard !Self.hasLineBreakOrControl(displayName) else { throw Invalid(description: "the display name contains a line break or control character") }
            guard displayName.utf8.count <= 200 else { throw Invalid(description: "the display name is longer than 200 bytes") }
        }
        self.address = address
        self.displayName = displayName.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces) }
    }

    /// `"Acme Sales" <sales@acme.example>` (a non-ASCII name as an RFC 2047 encoded word).
    public init(parsing text: String) throws(Invalid) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            var name = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 { name = String(name.dropFirst().dropLast()) }
            try self.init(String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)]), displayName: name.isEmpty ? nil : name)
        } else {
            try self.init(trimmed)
        }
    }

    static func hasLineBreakOrControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{2028}" || $0 == "\u{2029}" || $0 == "\u{85}" }
    }

    /// As a person reads it (`Acme Café <sales@acme.example>`), and as ``init(parsing:)`` reads
    /// it back: for settings and previews, not headers.
    var readable: String {
        guard let displayName else { return address }
        return "\(displayName) <\(address)>"
    }

    /// The header form.
    var header: String {
        guard let displayName else { return address }
        return "\(MIMEEncoding.phrase(displayName)) <\(address)>"
    }
}
