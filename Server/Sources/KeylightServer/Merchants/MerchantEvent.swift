/// One provider event, read into the one thing Keylight does with it. Each provider's reader
/// (``PaddleEvent``, ``LemonSqueezyEvent``, ``PolarEvent``) makes these; ``MerchantEventRules``
/// applies them the same way for every provider.
struct MerchantEvent: Sendable {
    /// The delivery's id, the key deliveries are deduplicated on (Paddle's `event_id`, Polar's
    /// `webhook-id`, a hash of Lemon Squeezy's body).
    var id: String
    /// The provider's name for the event (`transaction.completed`, `order_created`, …).
    var type: String
    var action: MerchantAction
}

enum MerchantAction: Sendable, Equatable {
    /// Money received for a new purchase: licenses to mint.
    case purchase(MerchantPurchase)
    /// What a subscription has paid for, or that it ended.
    case subscription(MerchantSubscriptionUpdate)
    /// An order refunded or charged back: in full (its licenses are revoked; a subscription's
    /// renewal payment, its licenses expire now) or in part (recorded).
    case refund(orderId: String, full: Bool, reason: String)
    /// A subscription's latest payment refunded, named by the subscription (Lemon Squeezy's
    /// invoices): its licenses expire now.
    case renewalRefunded(subscription: String, reason: String)
    /// A customer's address (Paddle names customers by id in its transactions).
    case customer(id: String, email: String)
    /// Nothing for Keylight to do; the reason is the outcome recorded.
    case ignored(MerchantOutcome)
}

struct MerchantPurchase: Sendable, Equatable {
    struct Item: Sendable, Equatable {
        /// The provider's price, variant or product id, as mapped on a key type.
        var mappingId: String
        var quantity: Int
    }

    var orderId: String
    var items: [Item]
    var email: String?
    var customerId: String?
    var subscriptionId: String?
    /// The end of the period this payment covers, for a subscription.
    var paidThrough: Int64?
    /// The license an upgrade, renewal or seats checkout was started for (`keylight_license_id`
    /// in the provider's custom data): the payment changes it instead of minting.
    var licenseId: String? = nil
}

struct MerchantSubscriptionUpdate: Sendable, Equatable {
    var id: String
    /// The order that started it, when the event names one (Lemon Squeezy's orders do not name
    /// their subscription; its subscriptions name their order).
    var orderId: String?
    /// The renewal payment (transaction, order) this update comes from, when it is one: recorded
    /// so a refund of it can take the period back, and so one refunded first extends nothing.
    var paymentId: String?
    var paidThrough: Int64?
    /// The subscription has ended: access stops at `endedAt` (or when the event is applied).
    var ended = false
    var endedAt: Int64?
}
