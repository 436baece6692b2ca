import Crypto
import Foundation
import KeylightCore
import Logging

/// `POST /api/{tenantId}/checkout` body.
struct CheckoutRequest: Decodable {
    var product_id: String?
    var key_type_id: String?
    var success_url: String?
    var cancel_url: String?
    var customer_email: String?
    /// A checkout for a license already sold (issue 49), exactly one of: an upgrade of that license
    /// to `key_type_id`, a renewal, or `quantity` extra seats. It sells the license's key type's
    /// offer, and its payment changes the license (`keylight_license_id` in the session's metadata).
    var upgrade_from: String?
    var renew: String?
    var seats: String?
    var quantity: Int?
}

/// Creates Stripe Checkout Sessions whose completion mints a license (protocol section 5): the
/// session's metadata names the product and key type the webhook mints.
struct CheckoutService: Sendable {
    let database: Database
    let sealer: SecretSealer
    let stripe: any StripeAPI
    let clock: any WallClock
    let logger: Logger
    /// How long after minting the buyer's success page may pick the key up (once).
    var pickupWindow: Int64 = 86_400

    /// Checks the tenant's checkout API key in constant time (both sides hashed first, so the
    /// comparison length never depends on the guess).
    func authorize(tenantId: String, bearer: String?) async throws {
        guard TenantPath.isValidId(tenantId), let bearer, bearer.utf8.count <= 512,
              let stored = try await database.checkoutKeyHash(tenantId: tenantId).flatMap(Hex.decode) else { throw APIError.unauthorized }
        guard ConstantTime.equals(Array(SHA256.hash(data: Data(bearer.utf8))), stored) else { throw APIError.unauthorized }
    }

    func createSession(tenantId: String, _ body: CheckoutRequest, idempotencyKey: String?) async throws -> StripeCheckoutSession {
        let productId = try Field.pathId(body.product_id, "product_id")
        let licenseChange = try await licenseCheckout(tenantId: tenantId, productId: productId, body)
        let keyTypeId = try licenseChange?.license.keyTypeId ?? Field.pathId(body.key_type_id, "key_type_id")
        let successURL = Self.withSessionPlaceholder(try Self.redirectURL(body.success_url, "success_url"))
        let cancelURL = try Self.redirectURL(body.cancel_url, "cancel_url")
        let email = try Field.email(body.customer_email)
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 255 {
            throw APIError.invalidRequest("Idempotency-Key must be 1-255 characters.")
        }
        guard let keyType = try await database.keyType(tenantId: tenantId, productId: productId, id: keyTypeId) else {
            throw APIError.notFound("Key type")
        }
        guard let priceId = licenseChange?.offer.priceRef ?? keyType.stripePriceId else {
            throw APIError.conflict("Key type \(keyTypeId) has no Stripe price; set stripe_price_id first.")
        }
        guard let settings = try await database.stripeSettings(tenantId: tenantId), let sealedKey = settings.sealedSecretKey else {
            throw APIError.conflict("Stripe is not configured for this tenant (no secret key).")
        }
        let secretKey = String(decoding: try sealer.open(sealedKey, context: StripeSealing.secretKey(tenantId: tenantId)), as: UTF8.self)

        // A change to a license is paid once: never a subscription.
        let mode = licenseChange == nil ? keyType.stripeMode ?? "payment" : "payment"
        var form: [(String, String)] = [
            ("mode", mode),
            ("line_items[0][price]", priceId),
            ("line_items[0][quantity]", "\(licenseChange?.quantity ?? 1)"),
            ("success_url", successURL),
            ("cancel_url", cancelURL),
        ]
        var metadata = [("tenant_id", tenantId), ("product_id", productId), ("key_type_id", keyTypeId)]
        if let licenseChange {
            metadata += [
                ("keylight_license_id", licenseChange.license.id), ("keylight_price_id", priceId),
                ("keylight_action", licenseChange.offer.kind.rawValue), ("keylight_quantity", "\(licenseChange.quantity)"),
            ]
        }
        form += metadata.map { ("metadata[\($0.0)]", $0.1) }
        if mode == "subscription" {
            // Copied onto the subscription, so its later events can be traced to the product.
            form += metadata.map { ("subscription_data[metadata][\($0.0)]", $0.1) }
        }
        if let email { form.append(("customer_email", email)) }

        // A client's key is scoped to its tenant; without one, the key still makes our own retry safe.
        let key = idempotencyKey.map { "keylight_" + Hex.encode(SHA256.hash(data: Data("\(tenantId)\n\($0)".utf8))) }
            ?? "keylight_" + UUID().uuidString.lowercased()
        let session: StripeCheckoutSession
        do {
            session = try await stripe.createCheckoutSession(secretKey: secretKey, form: form, idempotencyKey: key)
            logger.debug("created a Stripe Checkout Session", metadata: ["tenant": .string(tenantId), "session": .string(session.id)])
        } catch {
            logger.notice("Stripe refused a Checkout Session", metadata: ["tenant": .string(tenantId), "status": .string(error.status.map(String.init) ?? "unreachable")])
            throw APIError(status: .badGateway, code: "STRIPE_ERROR", message: "Stripe: \(error.message)")
        }
        if Self.isSessionId(session.id) {
            try await database.recordCheckoutSession(tenantId: tenantId, id: session.id, successOrigin: Self.origin(of: successURL), now: clock.unixSeconds)
        }
        return session
    }

    /// The license and offer a checkout for a license already sold is for; nil for a new purchase.
    func licenseCheckout(tenantId: String, productId: String, _ body: CheckoutRequest) async throws -> (license: License, offer: KeyTypeOffer, quantity: Int)? {
        let named = [("upgrade_from", body.upgrade_from, KeyTypeOffer.Kind.upgrade), ("renew", body.renew, .renewal), ("seats", body.seats, .seats)]
            .compactMap { name, id, kind in id.map { (name, $0, kind) } }
        guard let (field, id, kind) = named.first else {
            guard body.quantity == nil else { throw APIError.invalidRequest("Field quantity is for seats only.") }
            return nil
        }
        guard named.count == 1 else { throw APIError.invalidRequest("Send one of upgrade_from, renew and seats.") }
        guard let licenseId = PaidChangeLedger.licenseId(id), let license = try await database.license(tenantId: tenantId, productId: productId, id: licenseId) else {
            throw APIError.notFound("License")
        }
        guard license.status == .active else { throw APIError.conflict("The license is \(license.status.rawValue): it cannot be upgraded or renewed.") }
        let target = kind == .upgrade ? try Field.pathId(body.key_type_id, "key_type_id") : ""
        if kind != .upgrade, body.key_type_id != nil { throw APIError.invalidRequest("Field key_type_id names an upgrade's key type; \(field) takes none.") }
        let quantity = kind == .seats ? try Field.integer(body.quantity ?? 1, "quantity", in: 1...1_000) : 1
        if kind != .seats, body.quantity != nil { throw APIError.invalidRequest("Field quantity is for seats only.") }
        guard let offer = try await database.offers(tenantId: tenantId, productId: productId, keyTypeId: license.keyTypeId)
            .first(where: { $0.kind == kind && $0.targetKeyTypeId == target && $0.provider == .stripe }) else {
            throw APIError.conflict("Key type \(license.keyTypeId) offers no Stripe price for this \(kind == .upgrade ? "upgrade to \(target)" : kind.rawValue).")
        }
        return (license, offer, quantity)
    }

    /// The key of a paid session, once, within `pickupWindow` of minting.
    func pickUp(tenantId: String, sessionId: String) async throws -> CheckoutPickup {
        guard TenantPath.isValidId(tenantId), Self.isSessionId(sessionId) else { return .unknown }
        let sealer = self.sealer
        return try await database.pickUpCheckoutLicense(tenantId: tenantId, sessionId: sessionId, now: clock.unixSeconds, window: pickupWindow) { sealed in
            String(decoding: try sealer.open(sealed, context: StripeSealing.licenseKey(tenantId: tenantId, sessionId: sessionId)), as: UTF8.self)
        }
    }

    /// Stripe session ids (`cs_test_…`, `cs_live_…`): letters, digits and underscores.
    static func isSessionId(_ id: String) -> Bool {
        (1...255).contains(id.utf8.count) && id.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// Stripe replaces `{CHECKOUT_SESSION_ID}` in the success URL; a URL without it gets
    /// `session_id={CHECKOUT_SESSION_ID}`, so the success page can always pick up its key.
    static func withSessionPlaceholder(_ url: String) -> String {
        let placeholder = "{CHECKOUT_SESSION_ID}"
        guard !url.contains(placeholder) else { return url }
        let (base, fragment) = url.firstIndex(of: "#").map { (String(url[..<$0]), String(url[$0...])) } ?? (url, "")
        let separator = base.contains("?") ? (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") : "?"
        return base + separator + "session_id=" + placeholder + fragment
    }

    /// `scheme://host[:port]` of an absolute http(s) URL, as browsers send it in `Origin`.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "https" || scheme == "http", let host = components.host?.lowercased(), !host.isEmpty else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)"
    }

    /// An absolute http(s) URL of sane length; Stripe substitutes `{CHECKOUT_SESSION_ID}` itself.
    static func redirectURL(_ value: String?, _ name: String) throws(APIError) -> String {
        let text = try Field.required(value, name, max: 2_048)
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "https" || scheme == "http", components.host?.isEmpty == false else {
            throw APIError.invalidRequest("Field \(name) must be an absolute http or https URL.")
        }
        return text
    }
}
