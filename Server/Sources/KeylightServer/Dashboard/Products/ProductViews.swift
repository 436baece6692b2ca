// View models of `product.mustache`.

/// `product.mustache`.
struct ProductView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    var product: ProductRow
    /// Shown once, right after creation.
    var sdkKey: String?
    /// The Info.plist entries and Swift for this product's app (the real SDK key right after creation).
    var snippet: AppSnippet
    /// The server URL in the snippet: `--public-url`, else (nil) this request's host over http.
    var publicURL: String?
    var serverURL: String
    var keyTypes: [KeyTypeRow]
    var statusChart: String
    var activationChart: String
    var validationChart: String
}

struct KeyTypeRow: Sendable {
    var id: String
    var displayName: String
    var activationLimit: Int
    var duration: String
    var fallback: Bool
    var entitlements: String
    var leaseTTL: String
    var offlineLease: String
    /// "3", "5 floating (600 s heartbeat)", with "+25 %" when overage is allowed.
    var seats: String
    /// "365 days" of updates, or "every build".
    var updates: String
    var stripePriceId: String?
    var subscription: Bool
    var paddlePriceId: String?
    var lemonSqueezyVariantId: String?
    var polarProductId: String?
    var appStoreProductId: String?

    init(_ keyType: KeyType) {
        id = keyType.id
        displayName = keyType.displayName
        activationLimit = keyType.activationLimit
        duration = keyType.durationDays.map { "\($0) days" } ?? "lifetime"
        fallback = keyType.fallbackAccess
        entitlements = keyType.entitlementCodes.joined(separator: ", ")
        leaseTTL = keyType.leaseTtlSeconds % 86_400 == 0 ? "\(keyType.leaseTtlSeconds / 86_400) days" : "\(keyType.leaseTtlSeconds) s"
        offlineLease = "\(keyType.offlineLeaseDays) days"
        seats = "\(keyType.activationLimit)"
            + (keyType.floating ? " floating (\(keyType.heartbeatSeconds) s heartbeat)" : "")
            + (keyType.overagePercent > 0 ? " +\(keyType.overagePercent) %" : "")
        updates = keyType.updatesDays.map { "\($0) days" } ?? "every build"
        stripePriceId = keyType.stripePriceId
        subscription = keyType.stripeMode == "subscription"
        paddlePriceId = keyType.paddlePriceId
        lemonSqueezyVariantId = keyType.lemonSqueezyVariantId
        polarProductId = keyType.polarProductId
        appStoreProductId = keyType.appStoreProductId
    }
}
