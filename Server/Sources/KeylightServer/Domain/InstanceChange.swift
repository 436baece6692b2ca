/// Who changed an instance and by which route, for the audit log and the `how` of
/// `instance.activated` / `instance.deactivated` / `instance.expired` webhooks.
struct InstanceChange: Sendable {
    /// `customer` (the app's own deactivate, the portal), `offline` (files), an admin, the system.
    var actor: AuditActor
    var how: How

    enum How: String, Sendable {
        /// The app, over the SDK API (`activate`, `deactivate`).
        case app
        /// The customer portal.
        case portal
        /// An offline request file (activation) or a signed proof (deactivation).
        case offlineRequest = "offline_request"
        case offlineProof = "offline_proof"
        /// The admin API or the dashboard.
        case admin
        /// A floating seat whose device stopped validating, freed by the server.
        case heartbeatMissed = "heartbeat_missed"
    }

    static let app = InstanceChange(actor: .customer, how: .app)
    static let heartbeatMissed = InstanceChange(actor: .system, how: .heartbeatMissed)

    /// The `source` of the change's webhook: `sdk` for the app's own calls, else the actor.
    var source: String { how == .app ? "sdk" : actor.name }
}

/// The result of an activation attempt, decided inside its transaction.
enum ActivationOutcome: Sendable {
    /// A new instance took a slot.
    case activated(instanceId: String, grant: LicenseGrant)
    /// The machine (or instance) was already active: no new slot used.
    case existing(instanceId: String, grant: LicenseGrant)
    case licenseNotFound
    /// The license may not activate (``LicenseRules/refusal(_:now:activating:offline:)``), for this reason.
    case refused(APIError, grant: LicenseGrant)
    case limitReached
}

/// The result of a deactivation.
enum DeactivationOutcome: Sendable, Equatable {
    case deactivated
    case alreadyInactive
    case licenseNotFound
    case instanceNotFound
    /// The deactivation needed a proof the instance's device key did not sign (nothing changed).
    case invalidProof
}
