import Foundation
import KeylightCore
import Logging

/// Learns the addresses of Paddle buyers whose purchase named only a customer id, with the
/// tenant's Paddle API key: each lookup bounded by the API client's timeout, retried with
/// back-off (30 s doubling to an hour) for three days, then given up (audited). A
/// `customer.created`/`.updated` event settles a lookup too, key or not.
struct PaddleCustomerLookups: Sendable {
    let database: Database
    let sealer: SecretSealer
    let api: any PaddleCustomerAPI
    let clock: any WallClock
    var mailBuyers: Bool
    let logger: Logger

    /// A lookup is held this long by the process making it (well past the API timeout).
    static let lease: Int64 = 120
    static let giveUpAfter: Int64 = 3 * 86_400

    static func delay(afterAttempts attempts: Int) -> Int64 {
        Int64(min(30 * pow(2.0, Double(max(attempts - 1, 0))), 3_600))
    }

    /// Looks up what is due; answers how many were taken.
    @discardableResult
    func lookUpDue() async -> Int {
        let now = clock.unixSeconds
        let due: [CustomerLookup]
        do {
            due = try await database.claimCustomerLookups(now: now, limit: 10, lease: Self.lease)
        } catch {
            logger.debug("could not read the customer lookups", metadata: ["error": "\(error)"])
            return 0
        }
        for lookup in due { await lookUp(lookup) }
        return due.count
    }

    func lookUp(_ lookup: CustomerLookup) async {
        let provider = MerchantProvider.paddle
        do {
            guard let settings = try await database.merchantSettings(tenantId: lookup.tenantId, provider: provider), let sealedKey = settings.sealedAPIKey else { return }
            let apiKey = String(decoding: try sealer.open(sealedKey, context: provider.apiKeyContext(tenantId: lookup.tenantId)), as: UTF8.self)
            do {
                let email = try await api.email(customerId: lookup.id, apiKey: apiKey, environment: settings.environment)
                guard let address = MerchantEventRules.plainAddress(email) else {
                    throw PaddleAPIError(message: "Paddle's address for the customer is not a plain address", retryable: false)
                }
                try await database.learnMerchantCustomer(tenantId: lookup.tenantId, provider: provider, id: lookup.id, email: address, mail: mailBuyers, now: clock.unixSeconds, source: "lookup")
            } catch let error as PaddleAPIError {
                let now = clock.unixSeconds
                let next = error.retryable && now - lookup.createdAt < Self.giveUpAfter ? now + Self.delay(afterAttempts: lookup.attempts) : nil
                logger.notice("Paddle customer lookup failed", metadata: ["tenant": .string(lookup.tenantId), "customer": .string(lookup.id), "error": .string(error.message), "retry": .stringConvertible(next != nil)])
                try await database.customerLookupFailed(lookup, error: error.message, next: next, now: now)
            }
        } catch {
            logger.debug("customer lookup could not be recorded", metadata: ["error": "\(error)"])
        }
    }
}
