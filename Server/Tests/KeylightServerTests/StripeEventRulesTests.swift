import Testing
@testable import KeylightServer

/// The Stripe rules that need no database (the money paths against one are StripeMoneyPathTests).
@Suite(.timeLimit(.minutes(6))) struct StripeEventRulesTests {
    static let now: Int64 = 1_800_000_000
    static let day: Int64 = 86_400

    @Test func aNewLicenseTakesWhatBillingAlreadySaid() {
        let (now, day) = (Self.now, Self.day)
        func expiry(_ days: Int?, _ state: SubscriptionState?) -> Int64? {
            SubscriptionState.firstExpiry(durationDays: days, now: now, subscription: state)
        }
        // No subscription events yet: the key type's duration, or lifetime.
        #expect(expiry(30, nil) == now + 30 * day)
        #expect(expiry(nil, nil) == nil)
        // A period paid beyond the duration wins; one inside it does not shorten it.
        #expect(expiry(30, SubscriptionState(paidThrough: now + 40 * day)) == now + 40 * day)
        #expect(expiry(30, SubscriptionState(paidThrough: now + 10 * day)) == now + 30 * day)
        // A lifetime key type sold by subscription takes its first expiry from billing.
        #expect(expiry(nil, SubscriptionState(paidThrough: now + 10 * day)) == now + 10 * day)
        // An ended subscription caps it, lifetime or paid ahead.
        #expect(expiry(30, SubscriptionState(paidThrough: now + 40 * day, endedAt: now + 5 * day)) == now + 5 * day)
        #expect(expiry(nil, SubscriptionState(endedAt: now - day)) == now - day)
    }

    @Test func onlyIdsKeylightCanStoreAreUsed() {
        #expect(StripeEventRules.storable(nil) == nil)
        #expect(StripeEventRules.storable("") == nil)
        #expect(StripeEventRules.storable(String(repeating: "s", count: 256)) == nil)
        #expect(StripeEventRules.storable(String(repeating: "s", count: 255))?.utf8.count == 255)
        #expect(StripeEventRules.storable("sub_1") == "sub_1")
    }
}
