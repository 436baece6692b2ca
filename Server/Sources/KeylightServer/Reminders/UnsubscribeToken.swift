import Crypto
import Foundation
import KeylightCore

/// The token of a reminder mail's one-click opt-out link: it names a license and when the link
/// stops working, signed with HMAC-SHA256 under a key derived from the master key (so every
/// process sharing the master key checks it, and no database row is needed per mail). It carries
/// the license's id only: never its key, nor the key's hash.
///
/// `base64url("1|<license id>|<expires at>") . base64url(HMAC)`.
struct UnsubscribeToken: Sendable, Equatable {
    var licenseId: String
    /// Unix seconds after which the link is refused (a newer reminder carries a fresh one).
    var expiresAt: Int64

    /// What the derived key is for; another purpose's key signs nothing valid here.
    static let purpose = "keylight.reminders.unsubscribe.v1"
    /// Longer than the longest reminder threshold is ahead of its date, so a buyer may act on a
    /// reminder until after the date it announced.
    static let lifetime: Int64 = 400 * 86_400
    /// Longer tokens are refused before any work.
    static let maxLength = 512

    /// Why a token is refused.
    enum Refusal: Error, Equatable {
        /// Not a token this server made, or altered.
        case invalid
        case expired
    }

    func signed(with key: SymmetricKey) -> String {
        let payload = Array("1|\(licenseId)|\(expiresAt)".utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return Base64.encodeURLSafe(payload) + "." + Base64.encodeURLSafe(Array(mac))
    }

    /// `<public URL>/reminders/unsubscribe?token=…` for a token made `now`: what a reminder mail
    /// carries in `List-Unsubscribe` and its footer.
    static func link(publicURL: String, licenseId: String, now: Int64, key: SymmetricKey) -> String {
        "\(publicURL)/reminders/unsubscribe?token=" + UnsubscribeToken(licenseId: licenseId, expiresAt: now + lifetime).signed(with: key)
    }

    /// The token in `text`, if its signature holds (compared in constant time) and it is current.
    static func verify(_ text: String, key: SymmetricKey, now: Int64) -> Result<UnsubscribeToken, Refusal> {
        guard text.utf8.count <= maxLength else { return .failure(.invalid) }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64.decode(parts[0]), let mac = Base64.decode(parts[1]) else { return .failure(.invalid) }
        let expected = Array(HMAC<SHA256>.authenticationCode(for: payload, using: key))
        guard ConstantTime.equals(Array(mac), expected) else { return .failure(.invalid) }
        // `1|` first and the expiry after the last `|`: whatever the id holds between them.
        let fields = String(decoding: payload, as: UTF8.self)
        guard fields.hasPrefix("1|"), let last = fields.lastIndex(of: "|") else { return .failure(.invalid) }
        let licenseId = fields[fields.index(fields.startIndex, offsetBy: 2)..<max(last, fields.index(fields.startIndex, offsetBy: 2))]
        guard !licenseId.isEmpty, let expiresAt = Int64(fields[fields.index(after: last)...]) else { return .failure(.invalid) }
        guard expiresAt > now else { return .failure(.expired) }
        return .success(UnsubscribeToken(licenseId: String(licenseId), expiresAt: expiresAt))
    }
}
