import Crypto
import Foundation
import KeylightCore

struct CreateWebhookEndpointRequest: Decodable {
    var url: String?
    /// Event types to send; omitted = all.
    var events: [String]?
}

struct UpdateWebhookEndpointRequest: Decodable {
    var enabled: Bool?
}

/// `PATCH …/key-types/{id}`: what the key type sells as. Each id field: absent, unchanged;
/// null, no longer sold that way; a value, sold as that.
struct UpdateKeyTypeRequest: Decodable {
    /// `price_…`: the Stripe price a checkout sells.
    var stripe_price_id: String??
    var stripe_mode: String?
    /// `pri_…`: the Paddle Billing price whose purchases mint this key type.
    var paddle_price_id: String??
    /// The Lemon Squeezy variant (a number; JSON number or string).
    var lemonsqueezy_variant_id: String??
    /// The Polar product (a UUID).
    var polar_product_id: String??
    /// The App Store product (StoreKit `productId`) whose purchases are this key type.
    var appstore_product_id: String??

    enum CodingKeys: String, CodingKey { case stripe_price_id, stripe_mode, paddle_price_id, lemonsqueezy_variant_id, polar_product_id, appstore_product_id }

    init(stripePriceId: String?? = nil, stripeMode: String? = nil, paddlePriceId: String?? = nil, lemonSqueezyVariantId: String?? = nil, polarProductId: String?? = nil,
         appStoreProductId: String?? = nil) {
        stripe_price_id = stripePriceId
        stripe_mode = stripeMode
        paddle_price_id = paddlePriceId
        lemonsqueezy_variant_id = lemonSqueezyVariantId
        polar_product_id = polarProductId
        appstore_product_id = appStoreProductId
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func nullable(_ key: CodingKeys) throws -> String?? {
            guard container.contains(key) else { return nil }
            if try container.decodeNil(forKey: key) { return .some(nil) }
            // A variant id is a number in Lemon Squeezy's own API: taken as one too.
            if key == .lemonsqueezy_variant_id, let number = try? container.decode(Int64.self, forKey: key) { return .some(String(number)) }
            return .some(try container.decode(String.self, forKey: key))
        }
        stripe_price_id = try nullable(.stripe_price_id)
        stripe_mode = try container.decodeIfPresent(String.self, forKey: .stripe_mode)
        paddle_price_id = try nullable(.paddle_price_id)
        lemonsqueezy_variant_id = try nullable(.lemonsqueezy_variant_id)
        polar_product_id = try nullable(.polar_product_id)
        appstore_product_id = try nullable(.appstore_product_id)
    }
}

extension AdminService {
    static let maxEndpointsPerTenant = 20

    // MARK: Outbound webhooks

    /// Registers an endpoint and creates its signing secret, returned here only.
    func createWebhookEndpoint(tenantId: String, _ body: CreateWebhookEndpointRequest, actor: AuditActor) async throws -> (WebhookEndpoint, secret: String) {
        _ = try await requireTenant(tenantId)
        let url = try Self.webhookURL(body.url, policy: addressPolicy)
        let types = try Self.eventTypes(body.events)
        guard try await database.webhookEndpoints(tenantId: tenantId).count < Self.maxEndpointsPerTenant else {
            throw APIError.conflict("A tenant can have at most \(Self.maxEndpointsPerTenant) webhook endpoints.")
        }
        let id = "we_" + RandomUUID.compactLowercaseString()
        let secret = Self.newSecret(prefix: "whsec_")
        let now = clock.unixSeconds
        let endpoint = WebhookEndpoint(
            id: id, tenantId: tenantId, url: url,
            sealedSecret: try sealer.seal(Data(secret.utf8), context: WebhookOutbox.secretContext(endpointId: id)),
            events: "," + types.map(\.rawValue).joined(separator: ",") + ",",
            enabled: true, disabledReason: nil, createdAt: now, updatedAt: now
        )
        try await database.insertWebhookEndpoint(endpoint, actor: actor)
        return (endpoint, secret)
    }

    func webhookEndpoint(tenantId: String, id: String) async throws -> WebhookEndpoint {
        guard TenantPath.isValidId(tenantId), id.utf8.count <= 64, let endpoint = try await database.webhookEndpoint(tenantId: tenantId, id: id) else {
            throw APIError.notFound("Webhook endpoint")
        }
        return endpoint
    }

    func setWebhookEndpointEnabled(tenantId: String, id: String, _ body: UpdateWebhookEndpointRequest, actor: AuditActor) async throws -> WebhookEndpoint {
        guard let enabled = body.enabled else { throw APIError.invalidRequest("Missing field enabled.") }
        _ = try await webhookEndpoint(tenantId: tenantId, id: id)
        guard let endpoint = try await database.setWebhookEndpointEnabled(
            tenantId: tenantId, id: id, enabled: enabled, reason: enabled ? nil : "Disabled by \(actor.name).", now: clock.unixSeconds, actor: actor
        ) else { throw APIError.notFound("Webhook endpoint") }
        return endpoint
    }

    func deleteWebhookEndpoint(tenantId: String, id: String, actor: AuditActor) async throws {
        _ = try await webhookEndpoint(tenantId: tenantId, id: id)
        guard try await database.deleteWebhookEndpoint(tenantId: tenantId, id: id, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("Webhook endpoint")
        }
    }

    /// Sends a delivery's event again (`POST …/deliveries/{delivery}/redeliver`).
    func redeliver(tenantId: String, endpointId: String, deliveryId: String, actor: AuditActor) async throws -> WebhookDelivery {
        _ = try await webhookEndpoint(tenantId: tenantId, id: endpointId)
        guard deliveryId.utf8.count <= 255 else { throw APIError.notFound("Webhook delivery") }
        switch try await database.redeliver(tenantId: tenantId, endpointId: endpointId, deliveryId: deliveryId, now: clock.unixSeconds, actor: actor) {
        case .scheduled(let delivery): return delivery
        case .notFound: throw APIError.notFound("Webhook delivery")
        case .endpointDisabled: throw APIError.conflict("The endpoint is disabled; enable it before redelivering.")
        case .payloadExpired: throw APIError.conflict("This delivery's event is no longer kept (events are kept for \(WebhookDispatcher.payloadRetentionDays) days after delivery ends).")
        case .inFlight: throw APIError.conflict("This delivery is being attempted now.")
        }
    }

    /// https anywhere; plain http only to this machine (local receivers in development and tests),
    /// so signed events and raw license keys never cross a network in clear.
    static let loopbackNetworks = [IPNetwork("127.0.0.0/8")!, IPNetwork("::1/128")!]

    static func webhookURL(_ value: String?, policy: AddressPolicy) throws(APIError) -> String {
        let text = try Field.required(value, "url", max: 2_048)
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil else {
            throw APIError.invalidRequest("Field url must be an absolute https URL.")
        }
        // Punycode (xn--…) is the one spelling every parser agrees on.
        guard host.utf8.allSatisfy({ $0 < 0x80 }), URL(string: text)?.host.map({ $0.utf8.allSatisfy { $0 < 0x80 } }) == true else {
            throw APIError.invalidRequest("Field url must spell an international host name in its ASCII (xn--) form.")
        }
        // A bracketed host is an IPv6 literal (RFC 3986 §3.2.2) or nothing: "[27:C]" is no address.
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        let literal = bracketed ? String(host.dropFirst().dropLast()) : host
        if bracketed, !literal.contains(":") || IPAddress(literal) == nil {
            throw APIError.invalidRequest("Field url has a bracketed host that is not an IPv6 address.")
        }
        // A real loopback address, not a name that merely starts with "127." (127.attacker.example).
        let loopback = host == "localhost" || IPAddress(literal).map { address in Self.loopbackNetworks.contains { $0.contains(address) } } == true
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw APIError.invalidRequest("Field url must use https (plain http is allowed only to localhost).")
        }
        // Names are checked when each delivery resolves them; a literal can be refused now.
        if let address = IPAddress(literal), let kind = policy.refusal(address) {
            throw APIError.invalidRequest("Field url is a \(kind) address; webhooks go only to public addresses (unless the server runs with --webhook-allow-private).")
        }
        if host == "localhost", !policy.allowPrivate {
            throw APIError.invalidRequest("Field url is this machine; webhooks go only to public addresses (unless the server runs with --webhook-allow-private).")
        }
        return text
    }

    static func eventTypes(_ names: [String]?) throws(APIError) -> [WebhookEventType] {
        guard let names else { return WebhookEventType.allCases }
        guard !names.isEmpty, names.count <= WebhookEventType.allCases.count * 2 else {
            throw APIError.invalidRequest("Field events must list 1-\(WebhookEventType.allCases.count) event types.")
        }
        var types: [WebhookEventType] = []
        for name in names {
            guard let type = WebhookEventType(rawValue: name) else {
                throw APIError.invalidRequest("Unknown event type \(name.prefix(64)); known: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    // MARK: Checkout

    /// A new checkout API key for the tenant (returned here only; the old one stops working).
    func rotateCheckoutKey(tenantId: String, actor: AuditActor) async throws -> String {
        _ = try await requireTenant(tenantId)
        let key = Self.newSecret(prefix: "kl_checkout_")
        try await database.setCheckoutKey(tenantId: tenantId, keyHash: Hex.encode(SHA256.hash(data: Data(key.utf8))), now: clock.unixSeconds, actor: actor)
        return key
    }

    /// Sets what a key type sells as: the Stripe price (and mode), and the Paddle price, Lemon
    /// Squeezy variant and Polar product whose purchases mint it (each at most one key type's
    /// in a tenant: 409 otherwise).
    func updateKeyType(tenantId: String, productId: String, id: String, _ body: UpdateKeyTypeRequest, actor: AuditActor) async throws -> KeyType {
        let existing = try await requireKeyType(tenantId: tenantId, productId: productId, id: id)
        guard body.stripe_price_id != nil || body.stripe_mode != nil || body.paddle_price_id != nil || body.lemonsqueezy_variant_id != nil
                || body.polar_product_id != nil || body.appstore_product_id != nil else {
            throw APIError.invalidRequest("Nothing to update: send stripe_price_id, stripe_mode, paddle_price_id, lemonsqueezy_variant_id, polar_product_id and/or appstore_product_id.")
        }
        var sales = Database.KeyTypeSales(
            stripePriceId: existing.stripePriceId, stripeMode: existing.stripeMode, paddlePriceId: existing.paddlePriceId,
            lemonSqueezyVariantId: existing.lemonSqueezyVariantId, polarProductId: existing.polarProductId, appStoreProductId: existing.appStoreProductId
        )
        if let requested = body.stripe_price_id { sales.stripePriceId = try Field.stripePrice(requested) }
        if let mode = body.stripe_mode { sales.stripeMode = try Field.stripeMode(mode) }
        if let requested = body.paddle_price_id { sales.paddlePriceId = try Field.paddlePrice(requested) }
        if let requested = body.lemonsqueezy_variant_id { sales.lemonSqueezyVariantId = try Field.lemonSqueezyVariant(requested) }
        if let requested = body.polar_product_id { sales.polarProductId = try Field.polarProduct(requested) }
        if let requested = body.appstore_product_id { sales.appStoreProductId = try Field.appStoreProduct(requested) }
        switch try await database.setKeyTypeSales(tenantId: tenantId, productId: productId, id: id, sales, now: clock.unixSeconds, actor: actor) {
        case .updated(let keyType): return keyType
        case .notFound: throw APIError.notFound("Key type")
        case .taken(let field, let owner): throw APIError.conflict("Key type \(owner) already has this \(field); a purchase can mint only one key type.")
        }
    }

    func requireKeyType(tenantId: String, productId: String, id: String) async throws -> KeyType {
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(productId), TenantPath.isValidId(id),
              let keyType = try await database.keyType(tenantId: tenantId, productId: productId, id: id) else { throw APIError.notFound("Key type") }
        return keyType
    }
}

extension Field {
    static func stripePrice(_ value: String?) throws(APIError) -> String? {
        guard let price = try optional(value, "stripe_price_id", max: 255) else { return nil }
        guard price.hasPrefix("price_"), price.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw .invalidRequest("Field stripe_price_id must be a Stripe price id (price_…).")
        }
        return price
    }

    /// `pri_` and letters or digits (Paddle's ids are `pri_` + 26 of them).
    static func paddlePrice(_ value: String?) throws(APIError) -> String? {
        guard let price = try optional(value, "paddle_price_id", max: 64) else { return nil }
        guard price.hasPrefix("pri_"), price.utf8.count > 4, price.dropFirst(4).allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw .invalidRequest("Field paddle_price_id must be a Paddle price id (pri_…).")
        }
        return price
    }

    /// A positive whole number, as Lemon Squeezy numbers its variants.
    static func lemonSqueezyVariant(_ value: String?) throws(APIError) -> String? {
        guard let variant = try optional(value, "lemonsqueezy_variant_id", max: 18) else { return nil }
        guard variant.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let number = Int64(variant), number > 0 else {
            throw .invalidRequest("Field lemonsqueezy_variant_id must be a Lemon Squeezy variant id (a positive whole number).")
        }
        return String(number)
    }

    /// A UUID, as Polar names its products (stored lower-case, as Polar sends it).
    static func polarProduct(_ value: String?) throws(APIError) -> String? {
        guard let product = try optional(value, "polar_product_id", max: 36) else { return nil }
        guard UUID(uuidString: product) != nil, product.utf8.count == 36 else {
            throw .invalidRequest("Field polar_product_id must be a Polar product id (a UUID).")
        }
        return product.lowercased()
    }

    /// StoreKit product ids: letters, digits, `.`, `_`, `-` (App Store Connect's own alphabet), at most 100.
    static func appStoreProduct(_ value: String?) throws(APIError) -> String? {
        guard let product = try optional(value, "appstore_product_id", max: 100) else { return nil }
        guard !product.isEmpty, product.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }) else {
            throw .invalidRequest("Field appstore_product_id must be an App Store product id (letters, digits, . _ -).")
        }
        return product
    }

    /// A bundle id: letters, digits, `.` and `-`, at most 155 (Apple's limit).
    static func appStoreBundleId(_ value: String) throws(APIError) -> String {
        guard let bundle = try optional(value, "appstore_bundle_id", max: 155), !bundle.isEmpty,
              bundle.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x2D }) else {
            throw .invalidRequest("Field appstore_bundle_id must be a bundle id (letters, digits, . and -).")
        }
        return bundle
    }

    /// One or both of `Production` and `Sandbox`, stored comma-separated.
    static func appStoreEnvironments(_ values: [String]) throws(APIError) -> String {
        let known = ["Production", "Sandbox"]
        guard !values.isEmpty, values.count <= 2, values.allSatisfy(known.contains), Set(values).count == values.count else {
            throw .invalidRequest("Field appstore_environments must list Production and/or Sandbox.")
        }
        return known.filter(values.contains).joined(separator: ",")
    }

    static func stripeMode(_ value: String) throws(APIError) -> String {
        guard value == "payment" || value == "subscription" else { throw .invalidRequest("Field stripe_mode must be payment or subscription.") }
        return value
    }
}
