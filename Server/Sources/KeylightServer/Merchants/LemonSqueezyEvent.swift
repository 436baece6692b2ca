import Crypto
import Foundation
import KeylightCore

/// Reads Lemon Squeezy webhooks (JSON:API: `{"meta": {"event_name", …}, "data": {"type", "id", "attributes"}}`).
///
/// Lemon Squeezy sends no delivery id and signs no time, so a delivery is known by the SHA-256
/// of its body: a retry or a re-send from its dashboard is the same bytes, and a replayed
/// capture is a duplicate.
///
/// - `order_created` with status `paid`: `first_order_item.quantity` licenses of the key type
///   mapped to its `variant_id`, mailed to `user_email`.
/// - `order_refunded`: `refunded` (or status `refunded`) revokes; a partial refund is recorded.
/// - `subscription_*`: an `active` or `on_trial` one's `renews_at` (a `cancelled` one's `ends_at`)
///   renews, Lemon Squeezy moving it only once the payment is in (`past_due` and `unpaid` extend
///   nothing); `expired` ends. `subscription_payment_refunded` expires its licenses now.
/// - Test-mode events are refused unless the tenant's settings accept them.
enum LemonSqueezyEvent {
    static func deliveryId(of body: [UInt8]) -> String { "sha256:" + Hex.encode(SHA256.hash(data: Data(body))) }

    static func read(_ json: EventJSON, body: [UInt8], acceptTestMode: Bool) -> MerchantEvent? {
        guard let type = json["meta"]["event_name"].string, !type.isEmpty, type.utf8.count <= 255, json["data"].isObject else { return nil }
        let data = json["data"]
        let attributes = data["attributes"]
        let testMode = attributes["test_mode"].bool ?? json["meta"]["test_mode"].bool ?? false
        var action: MerchantAction = testMode && !acceptTestMode ? .ignored(.testMode) : Self.action(type: type, data: data, attributes: attributes)
        // Checkout custom data (`checkout[custom][keylight_license_id]`) comes back in `meta.custom_data`.
        if case .purchase(var purchase) = action {
            purchase.licenseId = PaidChangeLedger.licenseId(json["meta"]["custom_data"]["keylight_license_id"].string)
            action = .purchase(purchase)
        }
        return MerchantEvent(id: deliveryId(of: body), type: type, action: action)
    }

    static func action(type: String, data: EventJSON, attributes: EventJSON) -> MerchantAction {
        switch type {
        case "order_created":
            guard data["type"].string == "orders", let order = data["id"].id else { return .ignored(.ignored) }
            guard attributes["status"].string == "paid" else { return .ignored(.unpaid) }
            let item = attributes["first_order_item"]
            guard let variant = item["variant_id"].id else { return .ignored(.ignored) }
            return .purchase(MerchantPurchase(
                orderId: order, items: [.init(mappingId: variant, quantity: item["quantity"].quantity)],
                email: attributes["user_email"].string, customerId: attributes["customer_id"].id
            ))
        case "order_refunded":
            guard data["type"].string == "orders", let order = data["id"].id else { return .ignored(.ignored) }
            let full = attributes["refunded"].bool == true || attributes["status"].string == "refunded"
            return .refund(orderId: order, full: full, reason: "lemonsqueezy order_refunded")
        case "subscription_payment_refunded":
            guard data["type"].string == "subscription-invoices", let subscription = attributes["subscription_id"].id else { return .ignored(.ignored) }
            guard attributes["refunded"].bool == true || attributes["status"].string == "refunded" else { return .ignored(.partialRefund) }
            return .renewalRefunded(subscription: subscription, reason: "lemonsqueezy subscription_payment_refunded")
        case _ where type.hasPrefix("subscription_") && data["type"].string == "subscriptions":
            guard let subscription = data["id"].id else { return .ignored(.ignored) }
            let order = attributes["order_id"].id
            switch attributes["status"].string {
            case "expired":
                return .subscription(MerchantSubscriptionUpdate(id: subscription, orderId: order, ended: true, endedAt: attributes["ends_at"].time))
            case "cancelled":
                return .subscription(MerchantSubscriptionUpdate(id: subscription, orderId: order, paidThrough: attributes["ends_at"].time ?? attributes["renews_at"].time))
            case "active", "on_trial":
                return .subscription(MerchantSubscriptionUpdate(id: subscription, orderId: order, paidThrough: attributes["renews_at"].time ?? attributes["trial_ends_at"].time))
            default:
                return .subscription(MerchantSubscriptionUpdate(id: subscription, orderId: order))
            }
        default:
            return .ignored(.ignored)
        }
    }
}
