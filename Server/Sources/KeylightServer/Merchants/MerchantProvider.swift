/// A merchant of record Keylight takes payments from: it collects the money (and the tax) and
/// tells Keylight by signed webhook. Stripe, which Keylight sells through directly, has its own path.
enum MerchantProvider: String, Sendable, CaseIterable, Codable {
    case paddle
    case lemonSqueezy = "lemonsqueezy"
    case polar

    var displayName: String {
        switch self {
        case .paddle: "Paddle"
        case .lemonSqueezy: "Lemon Squeezy"
        case .polar: "Polar"
        }
    }

    /// The key-type field (and column) that maps this provider's catalogue to key types.
    var mappingField: String {
        switch self {
        case .paddle: "paddle_price_id"
        case .lemonSqueezy: "lemonsqueezy_variant_id"
        case .polar: "polar_product_id"
        }
    }

    /// What the mapping names, in the provider's own words.
    var mappingNoun: String {
        switch self {
        case .paddle: "price"
        case .lemonSqueezy: "variant"
        case .polar: "product"
        }
    }

    /// Who the audit log and outbound webhooks name as the actor.
    var actor: AuditActor { AuditActor(rawValue) }

    /// The context the tenant's webhook secret is sealed under.
    func webhookSecretContext(tenantId: String) -> String { "keylight.\(rawValue).webhook.\(tenantId)" }
    /// The context the tenant's API key is sealed under (Paddle).
    func apiKeyContext(tenantId: String) -> String { "keylight.\(rawValue).apikey.\(tenantId)" }
    /// A received event kept for retry (it names the buyer).
    func eventContext(tenantId: String, eventId: String) -> String { "keylight.\(rawValue).event.\(tenantId).\(eventId)" }

    /// How far a signed timestamp may be from the server's clock (Paddle and Polar sign one;
    /// Lemon Squeezy signs none).
    static let signatureTolerance: Int64 = 300
}
