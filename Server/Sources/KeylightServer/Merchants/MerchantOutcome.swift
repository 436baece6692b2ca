/// What applying a merchant event did (`{"received":true,"outcome":…}` and the event list).
enum MerchantOutcome: String, Sendable, CaseIterable {
    case duplicate, minted, revoked, expired, renewed, ignored, stale
    /// No key type maps any item of the purchase: kept, and applied again from the admin API or
    /// dashboard once one does.
    case unmapped
    /// The order's licenses exist already (another delivery, another event id).
    case alreadyMinted = "already_minted"
    /// The order was refunded before its purchase arrived: nothing minted.
    case refunded
    /// Part of the order was refunded: recorded, nothing revoked.
    case partialRefund = "partial_refund"
    /// The purchase asked for more licenses than one order may mint (``MerchantEventRules/maxLicensesPerOrder``).
    case tooManyLicenses = "too_many_licenses"
    case noLicense = "no_license"
    /// A customer's address was learnt (and the keys that waited for it were mailed).
    case customer
    /// A test-mode event, refused by the tenant's settings.
    case testMode = "test_mode"
    /// Not paid (yet): a status Keylight does not mint on.
    case unpaid
    /// A checkout for an existing license (an upgrade, a renewal, seats) changed it.
    case applied
    case alreadyApplied = "already_applied"
    /// A refund set back what a paid change did.
    case undone
    /// The order names a price no key type offers its license.
    case noOffer = "no_offer"
    /// The offer does not apply to the license as it is (a renewal of a license that never ends).
    case notApplicable = "not_applicable"

    /// Outcomes kept (sealed) so they can be applied again once the catalogue changes.
    var isRetryable: Bool { self == .unmapped }
}
