/// A payment provider's event as received and kept (Stripe's, or a merchant of record's): what the
/// admin API (``PaymentEventBody``) and the dashboard (``PaymentEventRow``) show of it.
protocol ReceivedPaymentEvent: Sendable {
    var id: String { get }
    var type: String { get }
    /// What applying it did (`StripeOutcome`, `MerchantOutcome`).
    var outcome: String { get }
    var attempts: Int { get }
    var receivedAt: Int64 { get }
    var updatedAt: Int64 { get }
    /// Whether the event is kept and can be applied again.
    var retryable: Bool { get }
    /// When the provider made the event, for providers that say (Stripe); nil: not shown.
    var providerCreatedAt: Int64?? { get }
}

extension StripeEventRecord: ReceivedPaymentEvent {
    /// Stripe dates every event; the field is shown (null when the event did not say).
    var providerCreatedAt: Int64?? { .some(eventCreated) }
}

extension MerchantEventRecord: ReceivedPaymentEvent {
    var providerCreatedAt: Int64?? { nil }
}
