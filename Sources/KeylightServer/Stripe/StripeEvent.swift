/// The parts of a Stripe event Keylight reads. Stripe sends much more; unknown fields are ignored.
struct StripeEvent: Decodable, Sendable {
    var id: String
    var type: String
    var data: Payload

    struct Payload: Decodable, Sendable {
        var object: StripeObject
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
    var periodEnd: Int64?
    var lines: Lines?

    struct CustomerDetails: Decodable, Sendable { var email: String? }
    struct Lines: Decodable, Sendable { var data: [Line]? }
    struct Line: Decodable, Sendable { var period: Period? }
    struct Period: Decodable, Sendable { var end: Int64? }

    enum CodingKeys: String, CodingKey {
        case id, metadata, customer, subscription, lines
        case customerDetails = "customer_details", customerEmail = "customer_email"
        case paymentIntent = "payment_intent", periodEnd = "period_end"
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
        periodEnd = try? c.decodeIfPresent(Int64.self, forKey: .periodEnd)
        lines = try? c.decodeIfPresent(Lines.self, forKey: .lines)
    }

    /// The end of the period an invoice paid for: the latest line's period end, else the invoice's.
    var paidThrough: Int64? {
        lines?.data?.compactMap { $0.period?.end }.max() ?? periodEnd
    }
}
