/// What the app may do right now.
public enum LicenseState: Hashable, Sendable, CustomStringConvertible {
    /// No license yet; the trial has this many days left (at least 1).
    case trial(daysLeft: Int)
    /// A current license: full access with its entitlements.
    case licensed
    /// A lapsed license whose key type keeps fallback access.
    case limited
    /// No license, trial over, and the product has a free tier.
    case freeTier
    /// Nothing current: trial over without a free tier, or a license that expired.
    case expired
    /// Refused: revoked, suspended or deactivated by the server, tampered data, or a clock set back.
    case invalid

    /// A stable name, as printed by `keylight client status`.
    public var name: String {
        switch self {
        case .trial: "trial"
        case .licensed: "licensed"
        case .limited: "limited"
        case .freeTier: "freeTier"
        case .expired: "expired"
        case .invalid: "invalid"
        }
    }

    public var description: String {
        if case .trial(let days) = self { return "trial(daysLeft: \(days))" }
        return name
    }
}
