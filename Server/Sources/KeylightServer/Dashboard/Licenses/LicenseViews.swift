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
    /// The server sends mail: minting can mail the key.
    var canMail: Bool
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
    /// "floating, 3 of 5 seats held" or "2 of 3 devices".
    var seats: String
    /// The edit and renew forms.
    var edit: LicenseEditView
    /// "until 2027-11-22", or nil when the license covers every build.
    var updates: String?
    /// The server sends mail.
    var canMail: Bool
    /// The license's key is kept sealed (minted after keys were), so it can be mailed.
    var keyRecoverable: Bool
    var mails: [MailRow]
}

/// One mail of a license (its page).
struct MailRow: Sendable {
    var queued: String
    var kind: String
    var to: String
    var status: String
    var finished: String?
    var next: String?
    var attempts: Int
    var lastError: String?

    init(_ job: MailJob) {
        queued = DashboardFormat.time(job.createdAt)
        let days = job.daysBefore == 1 ? "1 day" : "\(job.daysBefore ?? 0) days"
        switch job.kind {
        case .license: kind = "license key"
        case .lostKeys: kind = "lost-key request"
        case .expiryReminder: kind = "reminder: license ends in \(days)"
        case .updatesReminder: kind = "reminder: updates end in \(days)"
        case .accountLink: kind = "sign-in link"
        case .teamInvitation: kind = "team invitation"
        }
        to = job.toAddress
        status = job.status.rawValue
        finished = job.finishedAt.map(DashboardFormat.time)
        next = job.status == .pending && job.attempts > 0 ? DashboardFormat.time(job.nextAttemptAt) : nil
        attempts = job.attempts
        lastError = job.lastError
    }
}

extension LicenseView {
    /// How a license's seats read on its page. A floating seat counts while its deadline is ahead:
    /// one whose device went silent is not held, even before the sweep frees it.
    static func seats(keyType: KeyType?, limit override: Int? = nil, instances: [Instance], now: Int64) -> String {
        guard var keyType else { return "\(instances.filter(\.active).count) active" }
        if let override { keyType.activationLimit = override }
        let overage = keyType.overagePercent > 0 ? " (\(keyType.overagePercent) % overage allowed)" : ""
        if keyType.floating {
            let held = instances.filter { $0.active && ($0.seatExpiresAt ?? .max) > now }.count
            return "floating, \(held) of \(keyType.activationLimit) seats held\(overage); \(keyType.heartbeatSeconds) s heartbeat"
        }
        return "\(instances.filter(\.active).count) of \(keyType.activationLimit) devices\(overage)"
    }
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
    /// "Paddle, transaction txn_…": where a paid license came from; nil when made by hand.
    var source: String?

    init(_ license: License, now: Int64) {
        id = license.id
        maskedKey = license.maskedKey
        keySuffix = String(license.maskedKey.suffix(4))
        status = license.status.rawValue
        expired = license.isExpired(at: now)
        email = license.customerEmail
        keyTypeId = license.keyTypeId
        // Undated until its first activation: not a lifetime license.
        expires = license.startsOnActivation ? "starts on first activation" : license.expiresAt.map(DashboardFormat.time) ?? "never"
        activeInstances = license.activeInstances
        created = DashboardFormat.time(license.createdAt)
        source = license.paymentSource.map { source in
            let (name, noun) = switch source {
            case "stripe": ("Stripe", "Checkout Session")
            case "paddle": ("Paddle", "transaction")
            case "lemonsqueezy": ("Lemon Squeezy", "order")
            case "polar": ("Polar", "order")
            case "appstore": ("App Store", "original transaction")
            default: (source, "order")
            }
            return license.paymentOrderId.map { "\(name), \(noun) \($0)" } ?? name
        }
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
