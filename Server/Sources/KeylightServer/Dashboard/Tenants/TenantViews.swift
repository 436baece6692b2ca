// View models of `home.mustache` and `tenant.mustache`.

/// `home.mustache`: every tenant with its products' charts.
struct HomeView: Sendable {
    var chrome: Chrome
    var tenants: [TenantCard]
    var canCreateTenant: Bool
}

struct TenantCard: Sendable {
    var id: String
    var name: String
    var products: [ProductCard]
}

struct ProductCard: Sendable {
    var tenantId: String
    var id: String
    var name: String
    var keyPrefix: String
    var statusChart: String
    var activationChart: String
    var validationChart: String
    var total: Int
}

/// `tenant.mustache`.
struct TenantView: Sendable {
    var chrome: Chrome
    var tenant: Tenant
    var products: [ProductRow]
    var stripeConfigured: Bool
    var stripeSecretKeySet: Bool
    /// Paddle, Lemon Squeezy and Polar, each linking to its page.
    var merchants: [MerchantCard]
    var checkoutKeySet: Bool
    /// Shown once, right after it was made.
    var newCheckoutKey: String?
    var endpointCount: Int
    /// Which sections the user's role shows.
    var access: TenantAccess
    /// Stripe events that named a product or key type the tenant lacks: kept, retryable.
    var unappliedStripeEvents: [PaymentEventRow]
    /// Stored, not computed: templates see stored properties only.
    var hasUnappliedStripeEvents: Bool
}

/// What a member may see and do in a tenant, for the pages to show only that (the routes check
/// it again).
struct TenantAccess: Sendable {
    var payments: Bool
    var webhooks: Bool
    var mail: Bool
    var team: Bool
    var tokens: Bool
    var teamOrTokens: Bool
    var productsWrite: Bool
    var licensesWrite: Bool

    init(_ principal: Principal, tenantId: String, productId: String? = nil) {
        func holds(_ permission: Permission) -> Bool { principal.holds(permission, tenantId: tenantId, productId: productId) }
        payments = holds(.paymentsRead)
        webhooks = holds(.webhooksRead)
        mail = holds(.mailSettingsRead)
        team = holds(.usersManage)
        tokens = holds(.tokensManage)
        teamOrTokens = team || tokens
        productsWrite = holds(.productsWrite)
        licensesWrite = holds(.licensesWrite)
    }
}

struct ProductRow: Sendable {
    var id: String
    var name: String
    var keyPrefix: String
    var trialDays: Int
    var freeTier: Bool
    var created: String
    /// The customer portal is open (`/portal/<tenant>/<product>`).
    var portal: Bool
    var portalPath: String
    var sdkKeyRequired: Bool
    var appStoreBundleId: String?
    var appStoreProduction: Bool
    var appStoreSandbox: Bool

    init(_ product: Product) {
        id = product.id
        name = product.name
        keyPrefix = product.keyPrefix
        trialDays = product.trialDurationDays
        freeTier = product.freeTierEnabled
        created = DashboardFormat.time(product.createdAt)
        portal = product.portalEnabled
        sdkKeyRequired = product.sdkKeyRequired
        portalPath = "/portal/\(product.tenantId)/\(product.id)"
        appStoreBundleId = product.appStoreBundleId
        appStoreProduction = product.acceptedAppStoreEnvironments.contains("Production")
        appStoreSandbox = product.acceptedAppStoreEnvironments.contains("Sandbox")
    }
}
