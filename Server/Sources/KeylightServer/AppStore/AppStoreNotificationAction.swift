/// What an App Store Server Notification V2 means for the license of its purchase: the rule,
/// decided from the notification alone; storage carries it out
/// (``Database/applyAppStoreNotification(_:uuid:type:subtype:tenantId:transaction:now:)``).
enum AppStoreNotificationAction: Sendable, Equatable {
    /// `REFUND`, `REVOKE`: the license is revoked; a purchase not yet exchanged is remembered
    /// as refunded, so its exchange is refused.
    case revoke
    /// `REFUND_REVERSED`: what the refund revoked is reinstated.
    case reinstate
    /// `DID_RENEW`, `SUBSCRIBED` with an expiry: paid through that date.
    case paid(through: Int64)
    /// `EXPIRED`, `GRACE_PERIOD_EXPIRED`: the subscription ended then (now when Apple gives no date).
    case ended(at: Int64)
    /// Anything else.
    case ignore

    init(type: String, transaction: AppStoreTransaction, now: Int64) {
        switch type {
        case "REFUND", "REVOKE": self = .revoke
        case "REFUND_REVERSED": self = .reinstate
        case "DID_RENEW", "SUBSCRIBED": self = transaction.expiresDate.map { .paid(through: $0) } ?? .ignore
        case "EXPIRED", "GRACE_PERIOD_EXPIRED": self = .ended(at: transaction.expiresDate ?? now)
        default: self = .ignore
        }
    }
}
