/// What `account.mustache` shows. Never a full license key: only masked ones.
struct AccountView: Sendable {
    var title = "Your licenses"
    var productName: String
    /// `/portal/<tenant>/account`: every form posts below it.
    var base: String
    var csrf: String
    var notice: String?
    var problem: String?
    var signedIn = false
    var email: String?
    var licenses: [LicenseRow] = [] {
        didSet { hasLicenses = !licenses.isEmpty }
    }
    /// Stored, not computed: the template engine reads stored properties only.
    var hasLicenses = false
    /// The sign-in page reached from a mailed link: the button that uses it.
    var signInToken: String?
    /// The server mails sign-in links (SMTP and `--public-url` set).
    var canMail = false
    /// The tenant's products whose portal is on, each with its portal's address.
    var products: [ProductLink] = []
    var hasProducts = false

    struct ProductLink: Sendable {
        var name: String
        var url: String
    }

    init(tenant: Tenant, csrf: String, problem: String? = nil) {
        productName = tenant.name
        base = AccountSession.path(tenantId: tenant.id)
        self.csrf = csrf
        self.problem = problem
    }

    /// A build offered for download: its version, date, size and a link that works for an hour.
    struct BuildRow: Sendable {
        var version: String
        var released: String
        var size: String
        var url: String
    }

    struct LicenseRow: Sendable {
        var id: String
        var productName: String
        var maskedKey: String
        var keyTypeName: String
        var status: String
        var expires: String
        var updates: String
        var inUse: Int
        var limit: Int
        var devices: [DeviceRow]
        var upgrades: [OfferRow]
        var renewal: OfferRow?
        var seats: OfferRow?
        /// Checkout can start from here (`--public-url` is set); prices are shown either way.
        var canBuy: Bool
        var hasOffers: Bool
        /// The newest build this license's updates cover, to download (issue 51).
        var newestBuild: BuildRow? = nil

        init(license: License, product: Product, keyType: KeyType?, keyTypes: [KeyType], instances: [Instance], offers: [KeyTypeOffer], canBuy: Bool, now: Int64) {
            id = license.id
            productName = product.name
            maskedKey = license.maskedKey
            keyTypeName = keyType?.displayName ?? license.keyTypeId
            status = license.status == .active && license.isExpired(at: now) ? "expired" : license.status.rawValue
            expires = license.startsOnActivation ? "starts on first activation" : license.expiresAt.map(DashboardFormat.day) ?? "never"
            updates = license.startsOnActivation ? "starts on first activation" : license.updatesUntil.map { "until " + DashboardFormat.day($0) } ?? "every version"
            inUse = instances.count
            limit = license.activationLimitOverride ?? keyType?.activationLimit ?? 0
            devices = instances.map { DeviceRow(licenseId: license.id, id: $0.id, name: $0.name, lastSeen: DashboardFormat.time($0.lastSeenAt), offline: $0.isOffline) }
            // Buttons start Stripe Checkout; an offer sold only through another provider shows its price.
            let names = Dictionary(keyTypes.map { ($0.id, $0.displayName) }, uniquingKeysWith: { first, _ in first })
            func row(_ offers: [KeyTypeOffer], value: String, label: String) -> OfferRow? {
                guard let first = offers.first else { return nil }
                return OfferRow(value: value, label: label, price: first.priceLabel, buyable: canBuy && offers.contains { $0.provider == .stripe })
            }
            let byTarget = Dictionary(grouping: offers.filter { $0.kind == .upgrade }, by: \.targetKeyTypeId)
            upgrades = byTarget.keys.sorted().compactMap { row(byTarget[$0]!, value: "upgrade:\($0)", label: "Upgrade to \(names[$0] ?? $0)") }
            renewal = row(offers.filter { $0.kind == .renewal }, value: "renewal", label: "Renew")
            seats = row(offers.filter { $0.kind == .seats }, value: "seats", label: "Add devices")
            self.canBuy = canBuy
            hasOffers = !upgrades.isEmpty || renewal != nil || seats != nil
        }
    }

    struct DeviceRow: Sendable {
        var licenseId: String
        var id: String
        var name: String
        var lastSeen: String
        var offline: Bool
    }

    struct OfferRow: Sendable {
        var value: String
        var label: String
        var price: String?
        var buyable: Bool
    }
}
