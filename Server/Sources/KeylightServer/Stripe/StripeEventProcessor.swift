/// Applies Stripe events: each recorded once per tenant (``Database/recordStripeEvent(_:tenantId:now:sealEvent:retriedBy:apply:)``),
/// its rules (``StripeEventRules``) run inside the transaction that records it.
struct StripeEventProcessor: Sendable {
    let database: Database
    let sealer: SecretSealer
    /// Queue each minted license's mail to its buyer.
    var mailBuyers = false

    func apply(
        _ event: StripeEvent, tenantId: String, now: Int64, sealEvent: @escaping @Sendable () throws -> String?, retriedBy: AuditActor? = nil
    ) async throws -> StripeOutcome {
        let (sealer, mailBuyers) = (self.sealer, self.mailBuyers)
        return try await database.recordStripeEvent(event, tenantId: tenantId, now: now, sealEvent: sealEvent, retriedBy: retriedBy) { ledger in
            try await StripeEventRules(event: event, ledger: ledger, sealer: sealer, mailBuyers: mailBuyers).apply()
        }
    }
}
