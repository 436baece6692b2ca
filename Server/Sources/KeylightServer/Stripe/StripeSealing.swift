/// The contexts Stripe-related secrets are sealed under: each sealed value opens only for the
/// tenant and object it was sealed for.
enum StripeSealing {
    static func webhookSecret(tenantId: String) -> String { "keylight.stripe.webhook.\(tenantId)" }
    static func secretKey(tenantId: String) -> String { "keylight.stripe.secret.\(tenantId)" }
    /// A received event kept for retry (it names the buyer).
    static func event(tenantId: String, eventId: String) -> String { "keylight.stripe.event.\(tenantId).\(eventId)" }
    /// A Checkout Session's raw license key, kept until the buyer picks it up.
    static func licenseKey(tenantId: String, sessionId: String) -> String { "keylight.checkout.license.\(tenantId).\(sessionId)" }
}
