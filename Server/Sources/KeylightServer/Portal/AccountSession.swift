import Foundation
import Hummingbird
import KeylightCore

/// What the account pages remember about one browser, sealed in a cookie bound to
/// `/portal/<tenant>/account` as the portal's own is (``PortalSession``): the CSRF token, and
/// what the visitor proved: an address (a sign-in link) or one license (its key, through the
/// hosted clients' upgrade link). Never the key.
struct AccountSession: Codable, Sendable, Equatable {
    var csrf: String
    var expiresAt: Int64
    /// Signed in with a link mailed here: every license of the address.
    var email: String?
    /// Opened with one license's key: that license only.
    var licenseId: String?
    var notice: String?

    static let cookieName = "keylight_account"
    static let lifetime: Int64 = 30 * 60

    static func fresh(now: Int64) -> AccountSession {
        AccountSession(csrf: AccountController.newToken(), expiresAt: now + lifetime)
    }

    var isSignedIn: Bool { email != nil || licenseId != nil }

    static func path(tenantId: String) -> String { "/portal/\(tenantId)/account" }

    static func read(from request: Request, sealer: SecretSealer, tenantId: String, now: Int64) -> AccountSession? {
        guard let value = request.cookies[cookieName]?.value, value.utf8.count <= 4_096,
              let data = try? sealer.open(value, context: context(tenantId)),
              let session = try? JSONDecoder().decode(AccountSession.self, from: data), session.expiresAt > now else { return nil }
        return session
    }

    func cookie(sealer: SecretSealer, tenantId: String, secure: Bool) throws -> Cookie {
        let sealed = Base64.encodeURLSafe(Base64.decode(try sealer.seal(try JSONEncoder().encode(self), context: Self.context(tenantId))) ?? Data())
        return Cookie(name: Self.cookieName, value: sealed, maxAge: Int(Self.lifetime), path: Self.path(tenantId: tenantId), secure: secure, httpOnly: true, sameSite: .lax)
    }

    private static func context(_ tenantId: String) -> String { "portal-account|" + tenantId }

    func accepts(csrf token: String?) -> Bool {
        guard let token, !csrf.isEmpty else { return false }
        return ConstantTime.equals(Array(token.utf8), Array(csrf.utf8))
    }
}
