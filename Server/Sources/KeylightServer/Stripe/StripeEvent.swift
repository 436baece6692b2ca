import Foundation

/// The parts of a Stripe event Keylight reads. Stripe sends much more; unknown fields are ignored.
struct StripeEvent: Decodable, Sendable {
    var id: String
    var type: String
    /// When Stripe created the event (Unix seconds); nil when absent or out of range.
    var created: Int64?
    var data: Payload

    struct Payload: Decodable, Sendable {
        var object: StripeObject
    }

    enum CodingKeys: String, CodingKey { case id, type, created, data }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        type = try c.decode(String.self, forKey: .type)
        created = StripeObject.time(try? c.decodeIfPresent(Int64.self, forKey: .created))
        data = try c.decode(Payload.self, forKey: .data)
    }
}

/// A checkout session, charge, dispute, subscription or invoice: whichever fields it has.
struct StripeObject: Decodable, Sendable {
    var id: String?
    var metadata: [String: String]?
    var customerDetails: CustomerDetails?
    var customerEmail: String?
    var customer: String?
    var paymentIntent: String?
    var subscription: String?
    /// `paid`, `unpaid` or `no_payment_required` on a Checkout Session.
    var paymentStatus: String?
    var successURL: String?
    var periodEnd: Int64?
    /// When a subscription ended (on `customer.subscription.deleted`).
    var endedAt: Int64?
    var lines: Lines?
    /// Where API versions from 2025-03-31 put an invoice's subscription.
    var parent: Parent?

    struct CustomerDetails: Decodable, Sendable { var email: String? }
    struct Lines: Decodable, Sendable { var data: [Line]? }
    struct Line: Decodable, Sendable { var period: Period? }
    struct Period: Decodable, Sendable {
        var end: Int64?
        init(from decoder: any Decoder) throws {
            end = StripeObject.time(try? decoder.container(keyedBy: Keys.self).decodeIfPresent(Int64.self, forKey: .end))
        }
        enum Keys: String, CodingKey { case end }
    }
    struct Parent: Decodable, Sendable {
        var subscriptionDetails: SubscriptionDetails?
        enum CodingKeys: String, CodingKey { case subscriptionDetails = "subscription_details" }
        init(from decoder: any Decoder) throws {
            subscriptionDetails = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(SubscriptionDetails.self, forKey: .subscriptionDetails)
        }
    }
    struct SubscriptionDetails: Decodable, Sendable {
        var subscription: String?
        enum CodingKeys: String, CodingKey { case subscription }
        init(from decoder: any Decoder) throws {
            subscription = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .subscription)
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, metadata, customer, subscription, lines, parent
        case customerDetails = "customer_details", customerEmail = "customer_email"
        case paymentIntent = "payment_intent", periodEnd = "period_end", paymentStatus = "payment_status"
        case successURL = "success_url", endedAt = "ended_at"
    }

    /// Ids and expansions are both in use in Stripe's API; only string ids are read here.
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try? c.decodeIfPresent(String.self, forKey: .id)
        metadata = try? c.decodeIfPresent([String: String].self, forKey: .metadata)
        customerDetails = try? c.decodeIfPresent(CustomerDetails.self, forKey: .customerDetails)
        customerEmail = try? c.decodeIfPresent(String.self, forKey: .customerEmail)
        customer = try? c.decodeIfPresent(String.self, forKey: .customer)
        paymentIntent = try? c.decodeIfPresent(String.self, forKey: .paymentIntent)
        subscription = try? c.decodeIfPresent(String.self, forKey: .subscription)
        paymentStatus = try? c.decodeIfPresent(String.self, forKey: .paymentStatus)
        successURL = try? c.decodeIfPresent(String.self, forKey: .successURL)
        periodEnd = Self.time(try? c.decodeIfPresent(Int64.self, forKey: .periodEnd))
        endedAt = Self.time(try? c.decodeIfPresent(Int64.self, forKey: .endedAt))
        lines = try? c.decodeIfPresent(Lines.self, forKey: .lines)
        parent = try? c.decodeIfPresent(Parent.self, forKey: .parent)
    }

    /// Latest time Keylight accepts from Stripe (year 2200): later values are treated as absent,
    /// so no arithmetic on an event's times can overflow.
    static let latestTime: Int64 = 7_258_118_400

    static func time(_ value: Int64?) -> Int64? {
        guard let value, value > 0, value <= latestTime else { return nil }
        return value
    }

    /// The end of the period an invoice paid for: the latest line's period end, else the invoice's.
    var paidThrough: Int64? {
        lines?.data?.compactMap { $0.period?.end }.max() ?? periodEnd
    }

    /// An invoice's subscription, in either API version's place.
    var invoiceSubscription: String? {
        subscription ?? parent?.subscriptionDetails?.subscription
    }

    /// Whether a Checkout Session's money has been received (or none was due).
    var isPaid: Bool {
        paymentStatus == "paid" || paymentStatus == "no_payment_required"
    }

    /// The origin (`https://host[:port]`) of a Checkout Session's success page, for CORS on the
    /// license pick-up call.
    var successOrigin: String? { successURL.flatMap(CheckoutService.origin(of:)) }
}
