import Crypto
import Foundation
import KeylightCore

/// How a buyer signs in to their account in the portal: a link mailed to their address.
enum AccountSignIn {
    /// A link lives 15 minutes and works once.
    static let lifetime: Int64 = 15 * 60

    /// The seal of a link's token while its mail waits in the outbox, bound to the tenant and address.
    static func sealContext(tenantId: String, email: String) -> String { "portal-sign-in|\(tenantId)|\(email)" }

    /// A token's stored form: its SHA-256 (the token itself is only in the mail).
    static func hash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Data(token.utf8))) }

    /// A token as mailed: 32 random bytes, URL-safe base64 (43 characters).
    static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43 && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }
}

/// The buyer's account in the portal (issue 49): the sign-in link, and every license of an
/// address with what can be bought for it.
extension AdminService {
    /// Mails a sign-in link to `email` when it has licenses in the tenant; the caller answers the
    /// same either way (the mail is dropped when it is due if there are none).
    func requestSignInLink(tenantId: String, email: String) async throws {
        let token = String(AdminService.newSecret(prefix: "").prefix(43))
        let sealed = try sealer.seal(Data(token.utf8), context: AccountSignIn.sealContext(tenantId: tenantId, email: email))
        try await database.createSignInLink(
            tenantId: tenantId, email: email, tokenHash: AccountSignIn.hash(token), sealedToken: sealed, now: clock.unixSeconds, lifetime: AccountSignIn.lifetime
        )
    }

    /// The address a link signs in, once; nil for a link that is unknown, used or expired.
    func useSignInLink(tenantId: String, token: String) async throws -> String? {
        guard AccountSignIn.isWellFormed(token) else { return nil }
        return try await database.useSignInLink(tenantId: tenantId, tokenHash: AccountSignIn.hash(token), now: clock.unixSeconds)
    }

    func accountLicenses(tenantId: String, email: String) async throws -> [License] {
        try await database.accountLicenses(tenantId: tenantId, email: email)
    }

    /// A license of the tenant by its key (the hosted clients' upgrade link), in a product whose portal is on.
    func license(tenantId: String, keyHash: String) async throws -> License? {
        guard let license = try await database.license(keyHash: keyHash), license.tenantId == tenantId,
              try await database.product(tenantId: tenantId, id: license.productId)?.portalEnabled == true else { return nil }
        return license
    }

    func license(tenantId: String, id: String) async throws -> License? {
        guard let license = try await database.license(id: id), license.tenantId == tenantId else { return nil }
        return license
    }

    func offers(of license: License) async throws -> [KeyTypeOffer] {
        try await database.offers(tenantId: license.tenantId, productId: license.productId, keyTypeId: license.keyTypeId)
    }

    func tenantName(_ id: String) async throws -> String? { try await database.tenant(id: id)?.name }
}
