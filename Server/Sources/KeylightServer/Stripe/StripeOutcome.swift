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
    /// A checkout for an existing license (an upgrade, a renewal, seats) changed it.
    case applied
    case alreadyApplied = "already_applied"
    /// A refund set back what a paid change did.
    case undone
    /// The session names a price no key type offers its license.
    case noOffer = "no_offer"
    /// The offer does not apply to the license as it is (a renewal of a license that never ends).
    case notApplicable = "not_applicable"
    /// The order was refunded before its payment arrived.
    case refunded

    /// Outcomes Stripe should be told to send again (a non-2xx answer), and that stay
    /// retryable from the dashboard once Stripe stops.
    var isRetryable: Bool { self == .unknownProduct }
}
