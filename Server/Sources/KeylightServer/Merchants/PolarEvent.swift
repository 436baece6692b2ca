/// Reads Polar webhooks (`{"type", "timestamp", "data"}`; the delivery id is the `webhook-id` header).
///
/// - `order.paid` for a purchase or a subscription's start: one license of the key type mapped
///   to its `product_id`, mailed to `customer.email`. A subscription's later orders
///   (`billing_reason` `subscription_cycle`/`subscription_update`) renew it instead.
/// - `order.refunded`: status `refunded` revokes; `partially_refunded` is recorded.
/// - `subscription.*`: `revoked` (or an ended, canceled one) ends. Nothing else in them extends a
///   license: Polar moves the period (`subscription.cycled`, `.updated`) before the renewal
///   order is paid, so only a paid order does.
enum PolarEvent {
    static let renewalReasons: Set<String> = ["subscription_cycle", "subscription_update"]

    static func read(_ json: EventJSON, deliveryId: String) -> MerchantEvent? {
        guard let type = json["type"].string, !type.isEmpty, type.utf8.count <= 255, json["data"].isObject else { return nil }
        return MerchantEvent(id: deliveryId, type: type, action: action(type: type, data: json["data"]))
    }

    static func action(type: String, data: EventJSON) -> MerchantAction {
        switch type {
        case "order.paid":
            guard let order = data["id"].id else { return .ignored(.ignored) }
            guard data["status"].string == "paid" || data["paid"].bool == true else { return .ignored(.unpaid) }
            let subscription = data["subscription_id"].id
            let paidThrough = data["subscription"]["current_period_end"].time
            if let subscription, let reason = data["billing_reason"].string, renewalReasons.contains(reason) {
                return .subscription(MerchantSubscriptionUpdate(id: subscription, paymentId: order, paidThrough: paidThrough))
            }
            guard let product = data["product_id"].id ?? data["product"]["id"].id else { return .ignored(.ignored) }
            return .purchase(MerchantPurchase(
                orderId: order, items: [.init(mappingId: product, quantity: 1)], email: data["customer"]["email"].string,
                customerId: data["customer_id"].id, subscriptionId: subscription, paidThrough: paidThrough,
                licenseId: PaidChangeLedger.licenseId(data["metadata"]["keylight_license_id"].string)
            ))
        case "order.refunded":
            guard let order = data["id"].id else { return .ignored(.ignored) }
            return .refund(orderId: order, full: data["status"].string == "refunded", reason: "polar order.refunded")
        case _ where type.hasPrefix("subscription."):
            guard let subscription = data["id"].id else { return .ignored(.ignored) }
            let ended = data["ended_at"].time
            if type == "subscription.revoked" || (ended != nil && ["canceled", "unpaid", "incomplete_expired"].contains(data["status"].string ?? "")) {
                return .subscription(MerchantSubscriptionUpdate(id: subscription, ended: true, endedAt: ended ?? data["ends_at"].time))
            }
            return .subscription(MerchantSubscriptionUpdate(id: subscription))
        default:
            return .ignored(.ignored)
        }
    }
}
