/// Reads Paddle Billing notifications (`{"event_id", "event_type", "occurred_at", "data"}`).
///
/// - `transaction.completed` is the purchase: one license per quantity of each item's
///   `price.id`, the address from `custom_data.email` or else the customer (see ``MerchantCustomers``).
///   A subscription's later transactions (`origin` `subscription_recurring` and the like) renew it.
/// - `adjustment.created`/`.updated` that is an approved refund or chargeback: a `partial`
///   refund is recorded, anything else revokes the transaction's licenses.
/// - `subscription.*`: `canceled` ends. Nothing else in them extends a license: Paddle moves a
///   subscription's period forward before the renewal is paid (`past_due` carries the unpaid
///   period), so only a completed transaction does.
/// - `customer.created`/`.updated`: the customer's address.
enum PaddleEvent {
    /// Transactions a subscription makes after its first: renewals, not purchases.
    static let renewalOrigins: Set<String> = ["subscription_recurring", "subscription_charge", "subscription_update", "subscription_payment_method_change"]

    /// An approved adjustment is full when Paddle says so (`type` `full`), or, in older payloads
    /// without a `type`, when every adjusted item is (a chargeback always takes everything).
    static func isFull(_ adjustment: EventJSON) -> Bool {
        if let type = adjustment["type"].string { return type == "full" }
        let items = adjustment["items"].array
        return !items.isEmpty && items.allSatisfy { $0["type"].string == "full" }
    }

    static func read(_ json: EventJSON) -> MerchantEvent? {
        guard let id = json["event_id"].stringId, let type = json["event_type"].string, !type.isEmpty, type.utf8.count <= 255, json["data"].isObject else { return nil }
        return MerchantEvent(id: id, type: type, action: action(type: type, data: json["data"], occurredAt: json["occurred_at"].time))
    }

    static func action(type: String, data: EventJSON, occurredAt: Int64?) -> MerchantAction {
        switch type {
        case "transaction.completed":
            guard let transaction = data["id"].id else { return .ignored(.ignored) }
            guard data["status"].string == "completed" else { return .ignored(.unpaid) }
            let subscription = data["subscription_id"].id
            let paidThrough = data["billing_period"]["ends_at"].time
            if let subscription, let origin = data["origin"].string, renewalOrigins.contains(origin) {
                return .subscription(MerchantSubscriptionUpdate(id: subscription, paymentId: transaction, paidThrough: paidThrough))
            }
            let items: [MerchantPurchase.Item] = data["items"].array.compactMap { item in
                guard let price = item["price"]["id"].id ?? item["price_id"].id else { return nil }
                return MerchantPurchase.Item(mappingId: price, quantity: item["quantity"].quantity)
            }
            return .purchase(MerchantPurchase(
                orderId: transaction, items: items, email: data["custom_data"]["email"].string,
                customerId: data["customer_id"].id, subscriptionId: subscription, paidThrough: paidThrough,
                licenseId: PaidChangeLedger.licenseId(data["custom_data"]["keylight_license_id"].string)
            ))
        case "adjustment.created", "adjustment.updated":
            guard let action = data["action"].string, action == "refund" || action == "chargeback" else { return .ignored(.ignored) }
            guard data["status"].string == "approved", let transaction = data["transaction_id"].id else { return .ignored(.ignored) }
            // A chargeback takes the whole payment back; a refund only when it is full.
            let full = action == "chargeback" || isFull(data)
            return .refund(orderId: transaction, full: full, reason: "paddle \(action)")
        case _ where type.hasPrefix("subscription."):
            guard let subscription = data["id"].id else { return .ignored(.ignored) }
            switch data["status"].string {
            case "canceled":
                let endedAt = data["canceled_at"].time ?? data["scheduled_change"]["effective_at"].time ?? occurredAt
                return .subscription(MerchantSubscriptionUpdate(id: subscription, ended: true, endedAt: endedAt))
            default:
                return .subscription(MerchantSubscriptionUpdate(id: subscription))
            }
        case "customer.created", "customer.updated":
            guard let customer = data["id"].id, let email = data["email"].string else { return .ignored(.ignored) }
            return .customer(id: customer, email: email)
        default:
            return .ignored(.ignored)
        }
    }
}
