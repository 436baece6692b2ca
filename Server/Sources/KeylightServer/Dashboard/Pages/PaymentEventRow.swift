/// A received payment event as the dashboard lists it (Stripe's unapplied events on the tenant
/// page, a merchant's events on its page).
struct PaymentEventRow: Sendable {
    var id: String
    var type: String
    var outcome: String
    var attempts: Int
    var received: String
    var retryable: Bool

    init(_ event: some ReceivedPaymentEvent) {
        id = event.id
        type = event.type
        outcome = event.outcome
        attempts = event.attempts
        received = DashboardFormat.time(event.receivedAt)
        retryable = event.retryable
    }
}
