import Foundation
import KeylightCore

// What the templates show. Mustache reads stored properties through reflection, so these
// are plain structs of strings, numbers, optionals (nil hides a section) and arrays.

/// What every page's layout needs.
struct Chrome: Sendable {
    var title: String
    var email: String?
    var csrf: String
    var flash: String?
    var error: String?
    /// Which top-level section is current (Mustache reads stored properties only).
    var tenantsNav: Bool
    var keysNav: Bool
    var auditNav: Bool

    init(title: String, email: String?, csrf: String, flash: String? = nil, error: String? = nil, section: String = "tenants") {
        self.title = title
        self.email = email
        self.csrf = csrf
        self.flash = flash
        self.error = error
        tenantsNav = section == "tenants"
        keysNav = section == "keys"
        auditNav = section == "audit"
    }
}

struct LoginView: Sendable {
    var chrome: Chrome
    var email: String?
    var next: String
}

struct ErrorView: Sendable {
    var chrome: Chrome
    var status: Int
    var message: String
    var back: String
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

struct TenantCard: Sendable {
    var id: String
    var name: String
    var products: [ProductCard]
}

struct HomeView: Sendable {
    var chrome: Chrome
    var tenants: [TenantCard]
}

struct ProductRow: Sendable {
    var id: String
    var name: String
    var keyPrefix: String
    var trialDays: Int
    var freeTier: Bool
    var created: String
}

struct EndpointRow: Sendable {
    var id: String
    var url: String
    var events: String
    var enabled: Bool
    var disabledReason: String?
    var created: String
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
}

struct EventTypeOption: Sendable {
    var name: String
}

struct TenantView: Sendable {
    var chrome: Chrome
    var tenant: Tenant
    var products: [ProductRow]
    var stripeConfigured: Bool
    var stripeSecretKeySet: Bool
    var checkoutKeySet: Bool
    /// Shown once, right after it was made.
    var newCheckoutKey: String?
    var newEndpointSecret: String?
    var endpoints: [EndpointRow]
    var deliveries: [DeliveryRow]
    var eventTypes: [EventTypeOption]
    /// Stripe events that named a product or key type the tenant lacks: kept, retryable.
    var unappliedStripeEvents: [StripeEventRow]
    /// Stored, not computed: templates see stored properties only.
    var hasUnappliedStripeEvents: Bool
}

struct StripeEventRow: Sendable {
    var id: String
    var type: String
    var attempts: Int
    var received: String
    var retryable: Bool
}

struct KeyTypeRow: Sendable {
    var id: String
    var displayName: String
    var activationLimit: Int
    var duration: String
    var fallback: Bool
    var entitlements: String
    var leaseTTL: String
    var stripePriceId: String?
    var subscription: Bool
}

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

struct LicenseRow: Sendable {
    var id: String
    var maskedKey: String
    var keySuffix: String
    var status: String
    var expired: Bool
    var email: String?
    var keyTypeId: String
    var expires: String
    var activeInstances: Int
    var created: String
}

struct StatusOption: Sendable {
    var value: String
    var label: String
    var selected: Bool
}

struct KeyTypeOption: Sendable {
    var id: String
    var label: String
}

struct LicensesView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var productId: String
    var productName: String
    var email: String?
    var keySuffix: String?
    var statuses: [StatusOption]
    var licenses: [LicenseRow]
    var nextURL: String?
    var csvURL: String
    var keyTypes: [KeyTypeOption]
}

struct InstanceRow: Sendable {
    var id: String
    var name: String
    var active: Bool
    var activated: String
    var lastSeen: String
    var deactivated: String?
}

struct LicenseView: Sendable {
    var chrome: Chrome
    var tenantId: String
    var productId: String
    var productName: String
    var license: LicenseRow
    var instances: [InstanceRow]
    /// The raw key, right after minting or reminting only.
    var newKey: String?
    /// The same key as an inline SVG QR code (for a phone camera).
    var newKeyQR: String?
    var canRevoke: Bool
    var canSuspend: Bool
    var canReinstate: Bool
}

struct SigningKeyListRow: Sendable {
    var kid: String
    var publicKey: String
    var status: String
    var created: String
    var canRetire: Bool
}

/// One tenant's keys on the signing-keys page, with what its next app build must trust.
struct TenantSigningKeys: Sendable {
    var id: String
    var name: String
    var keys: [SigningKeyListRow]
    /// The prepared key, if any (rotation promotes it).
    var next: String?
    var trustedKeys: String
}

struct SigningKeysView: Sendable {
    var chrome: Chrome
    var tenants: [TenantSigningKeys]
}

struct AuditRow: Sendable {
    var at: String
    var actor: String
    var action: String
    var tenant: String?
    var target: String?
    var details: String
}

struct AuditView: Sendable {
    var chrome: Chrome
    var entries: [AuditRow]
    var nextURL: String?
}

extension LicenseRow {
    init(_ license: License, now: Int64) {
        id = license.id
        maskedKey = license.maskedKey
        keySuffix = String(license.maskedKey.suffix(4))
        status = license.status.rawValue
        expired = license.expiresAt.map { $0 <= now } ?? false
        email = license.customerEmail
        keyTypeId = license.keyTypeId
        expires = license.expiresAt.map(DashboardFormat.time) ?? "never"
        activeInstances = license.activeInstances
        created = DashboardFormat.time(license.createdAt)
    }
}

extension ProductRow {
    init(_ product: Product) {
        id = product.id
        name = product.name
        keyPrefix = product.keyPrefix
        trialDays = product.trialDurationDays
        freeTier = product.freeTierEnabled
        created = DashboardFormat.time(product.createdAt)
    }
}

extension KeyTypeRow {
    init(_ keyType: KeyType) {
        id = keyType.id
        displayName = keyType.displayName
        activationLimit = keyType.activationLimit
        duration = keyType.durationDays.map { "\($0) days" } ?? "lifetime"
        fallback = keyType.fallbackAccess
        entitlements = keyType.entitlementCodes.joined(separator: ", ")
        leaseTTL = keyType.leaseTtlSeconds % 86_400 == 0 ? "\(keyType.leaseTtlSeconds / 86_400) days" : "\(keyType.leaseTtlSeconds) s"
        stripePriceId = keyType.stripePriceId
        subscription = keyType.stripeMode == "subscription"
    }
}
