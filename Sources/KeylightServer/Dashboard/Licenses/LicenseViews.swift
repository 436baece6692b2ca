// View models of `licenses.mustache` and `license.mustache`.

/// `licenses.mustache`: one page of a product's licenses, with the search form.
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

struct StatusOption: Sendable {
    var value: String
    var label: String
    var selected: Bool
}

struct KeyTypeOption: Sendable {
    var id: String
    var label: String
}

/// `license.mustache`.
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

struct InstanceRow: Sendable {
    var id: String
    var name: String
    var active: Bool
    var activated: String
    var lastSeen: String
    var deactivated: String?
    /// Activated from an offline request file.
    var offline: Bool

    init(_ instance: Instance) {
        id = instance.id
        name = instance.name
        active = instance.active
        activated = DashboardFormat.time(instance.activatedAt)
        lastSeen = DashboardFormat.time(instance.lastValidatedAt)
        deactivated = instance.deactivatedAt.map(DashboardFormat.time)
        offline = instance.isOffline
    }
}
