/// What applying a Stripe event did.
enum StripeOutcome: String, Sendable, CaseIterable {
    case duplicate, minted, revoked, expired, renewed, ignored
    case unknownProduct = "unknown_product"
    case noLicense = "no_license"
    /// A completed Checkout whose money has not arrived yet (delayed payment methods).
    case awaitingPayment = "awaiting_payment"
    /// The delayed payment failed: nothing minted (and anything minted earlier revoked).
    case paymentFailed = "payment_failed"
    /// The session's license exists already (completed, then async_payment_succeeded).
    case alreadyMinted = "already_minted"
    /// An invoice older than what the license already runs to, or for an ended subscription.
    case stale

    /// Outcomes Stripe should be told to send again (a non-2xx answer), and that stay
    /// retryable from the dashboard once Stripe stops.
    var isRetryable: Bool { self == .unknownProduct }
}
