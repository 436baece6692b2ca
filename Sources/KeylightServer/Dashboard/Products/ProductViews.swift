// View models of `product.mustache`.

/// `product.mustache`.
struct ProductView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var tenantName: String
    var product: ProductRow
    /// Shown once, right after creation.
    var sdkKey: String?
    var snippet: String
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
    var stripePriceId: String?
    var subscription: Bool

    init(_ keyType: KeyType) {
        id = keyType.id
        displayName = keyType.displayName
        activationLimit = keyType.activationLimit
        duration = keyType.durationDays.map { "\($0) days" } ?? "lifetime"
        fallback = keyType.fallbackAccess
        entitlements = keyType.entitlementCodes.joined(separator: ", ")
        leaseTTL = keyType.leaseTtlSeconds % 86_400 == 0 ? "\(keyType.leaseTtlSeconds / 86_400) days" : "\(keyType.leaseTtlSeconds) s"
        offlineLease = "\(keyType.offlineLeaseDays) days"
        stripePriceId = keyType.stripePriceId
        subscription = keyType.stripeMode == "subscription"
    }
}
