// View models of `home.mustache` and `tenant.mustache`.

/// `home.mustache`: every tenant with its products' charts.
struct HomeView: Sendable {
    var chrome: Chrome
    var tenants: [TenantCard]
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
    var newEndpointSecret: String?
    var endpoints: [EndpointRow]
    var deliveries: [DeliveryRow]
    var eventTypes: [EventTypeOption]
    /// Stripe events that named a product or key type the tenant lacks: kept, retryable.
    var unappliedStripeEvents: [PaymentEventRow]
    /// Stored, not computed: templates see stored properties only.
    var hasUnappliedStripeEvents: Bool
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

struct EndpointRow: Sendable {
    var id: String
    var url: String
    var events: String
    var enabled: Bool
    var disabledReason: String?
    var created: String

    init(_ endpoint: WebhookEndpoint) {
        id = endpoint.id
        url = endpoint.url
        events = endpoint.eventTypes.map(\.rawValue).joined(separator: ", ")
        enabled = endpoint.enabled
        disabledReason = endpoint.disabledReason
        created = DashboardFormat.time(endpoint.createdAt)
    }
}

struct DeliveryRow: Sendable {
    var id: String
    var endpointId: String
    /// Ended deliveries whose event is still kept can be sent again.
    var canRedeliver: Bool
    var eventType: String
    var eventId: String
    var endpointURL: String
    var status: String
    var attempts: Int
    var lastStatus: String
    var lastError: String?
    var created: String
    var next: String?

    init(_ delivery: WebhookDelivery, endpointURL: String) {
        id = delivery.id
        endpointId = delivery.endpointId
        canRedeliver = delivery.status != .pending && delivery.sealedPayload != nil
        eventType = delivery.eventType
        eventId = delivery.eventId
        self.endpointURL = endpointURL
        status = delivery.status.rawValue
        attempts = delivery.attempts
        lastStatus = delivery.lastStatusCode.map(String.init) ?? "—"
        lastError = delivery.lastError
        created = DashboardFormat.time(delivery.createdAt)
        next = delivery.status == .pending ? DashboardFormat.time(delivery.nextAttemptAt) : nil
    }
}

struct EventTypeOption: Sendable {
    var name: String
}

