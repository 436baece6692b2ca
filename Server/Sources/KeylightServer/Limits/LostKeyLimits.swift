import KeylightCore

/// The limits of "Lost your key?" requests, one set for every door that takes them (the portal's
/// form and the SDK's `lost-key`): a client that alternates the two spends one budget, and a
/// mailbox gets no more mail either way.
struct LostKeyLimits: Sendable {
    /// Per client address: nobody walks a list of addresses.
    let perClient: RateLimiter<IPAddress>
    /// Per recipient (the address as stored, lower-cased): nobody floods a mailbox.
    let perRecipient: RateLimiter<String>

    init(limits: ServerLimits, clock: any WallClock) {
        perClient = RateLimiter(limit: limits.lostKeyPerClient, clock: clock)
        perRecipient = RateLimiter(limit: limits.lostKeyPerRecipient, clock: clock)
    }
}
