import Foundation
import Hummingbird
import KeylightCore

/// What the portal remembers about one browser, kept in the browser itself: a cookie sealed
/// (AES-GCM under the server's master key, bound to the portal's path) so it can be neither read
/// nor forged, and needs no database row per visitor. Every server process sharing the master
/// key reads it. It carries the CSRF token every form must echo and, once a key was entered, the
/// license it opened (its key hash, never the key).
struct PortalSession: Codable, Sendable, Equatable {
    var csrf: String
    /// Unix seconds after which the cookie is worth nothing.
    var expiresAt: Int64
    var licenseId: String?
    var keyHash: String?
    var maskedKey: String?
    /// A one-time message for the next page (after a redirect).
    var notice: String?
    var problem: String?

    static let cookieName = "keylight_portal"
    /// A portal visit: long enough to fetch a file from another machine, short enough that a
    /// shared computer forgets the license soon.
    static let lifetime: Int64 = 30 * 60

    static func fresh(now: Int64) -> PortalSession {
        PortalSession(csrf: AccountController.newToken(), expiresAt: now + lifetime)
    }

    var hasLicense: Bool { licenseId != nil && keyHash != nil }

    /// "Use another key", or the key stopped working.
    mutating func forgetLicense() {
        (licenseId, keyHash, maskedKey) = (nil, nil, nil)
    }

    /// The session in `request`'s cookie, if it opens and is current.
    static func read(from request: Request, sealer: SecretSealer, path: String, now: Int64) -> PortalSession? {
        guard let value = request.cookies[cookieName]?.value, value.utf8.count <= 4_096,
              let data = try? sealer.open(value, context: context(path)),
              let session = try? JSONDecoder().decode(PortalSession.self, from: data), session.expiresAt > now else { return nil }
        return session
    }

    /// The cookie carrying this session (refreshed on every page, so an active visitor keeps it).
    func cookie(sealer: SecretSealer, path: String, secure: Bool) throws -> Cookie {
        // URL-safe and unpadded: standard base64's `+`, `/` and `=` are not safe in every cookie parser.
        let sealed = Base64.encodeURLSafe(Base64.decode(try sealer.seal(try JSONEncoder().encode(self), context: Self.context(path))) ?? Data())
        return Cookie(name: Self.cookieName, value: sealed, maxAge: Int(Self.lifetime), path: path, secure: secure, httpOnly: true, sameSite: .strict)
    }

    static func expired(path: String, secure: Bool) -> Cookie {
        Cookie(name: cookieName, value: "", maxAge: 0, path: path, secure: secure, httpOnly: true, sameSite: .strict)
    }

    /// Bound to one portal: a cookie from another product's portal does not open here.
    private static func context(_ path: String) -> String { "portal-session|" + path }

    /// Whether the form's token is this session's (constant time).
    func accepts(csrf token: String?) -> Bool {
        guard let token, !csrf.isEmpty else { return false }
        return ConstantTime.equals(Array(token.utf8), Array(csrf.utf8))
    }
}
