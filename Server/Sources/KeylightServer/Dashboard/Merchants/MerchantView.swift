/// `merchant.mustache`: one merchant of record's settings for a tenant, and its received events.
struct MerchantView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    var provider: String
    var providerName: String
    /// Where the provider sends webhooks (the server's public URL when known, else a path).
    var webhookURL: String
    var configured: Bool
    var isPaddle: Bool
    var isLemonSqueezy: Bool
    var apiKeySet: Bool
    var sandbox: Bool
    var acceptTestMode: Bool
    var secretHint: String
    var mappingField: String
    var mappingNoun: String
    var events: [PaymentEventRow]
    var hasEvents: Bool
}


/// A merchant of record as the tenant page lists it.
struct MerchantCard: Sendable {
    var provider: String
    var name: String
    var configured: Bool
}
