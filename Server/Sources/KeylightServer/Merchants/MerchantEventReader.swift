import KeylightCore
import KeylightSigning

/// What the webhook routes and a retry share: a delivery's signature check and its reading.
extension MerchantProvider {
    /// The delivery's signature, checked against the tenant's secret before anything is parsed.
    func isSigned(_ headers: (String) -> String?, body: [UInt8], secret: String, now: Int64) -> Bool {
        switch self {
        case .paddle:
            PaddleSignature.isValid(header: headers("Paddle-Signature"), body: body, secret: secret, now: now, tolerance: Self.signatureTolerance)
        case .lemonSqueezy:
            LemonSqueezySignature.isValid(header: headers("X-Signature"), body: body, secret: secret)
        case .polar:
            StandardWebhookSignature.isValid(
                id: headers("webhook-id"), timestamp: headers("webhook-timestamp"), signatures: headers("webhook-signature"),
                body: body, secret: secret, now: now, tolerance: Self.signatureTolerance
            )
        }
    }

    /// Why a signature was refused, for the 400's message.
    var signatureRequirement: String {
        switch self {
        case .paddle: "Paddle-Signature is missing, does not match, or is more than \(Self.signatureTolerance) seconds from the server's clock."
        case .lemonSqueezy: "X-Signature is missing or does not match."
        case .polar: "webhook-id, webhook-timestamp or webhook-signature is missing, does not match, or is more than \(Self.signatureTolerance) seconds from the server's clock."
        }
    }

    /// A signed body read as an event; nil when it is not one of this provider's.
    /// `deliveryId` is Polar's `webhook-id` (the other providers name their deliveries in the body).
    func read(_ body: [UInt8], deliveryId: String?, settings: MerchantSettings) -> MerchantEvent? {
        guard let json = EventJSON.parse(body) else { return nil }
        switch self {
        case .paddle: return PaddleEvent.read(json)
        case .lemonSqueezy: return LemonSqueezyEvent.read(json, body: body, acceptTestMode: settings.acceptTestMode)
        case .polar:
            guard let deliveryId, !deliveryId.isEmpty, deliveryId.utf8.count <= 255 else { return nil }
            return PolarEvent.read(json, deliveryId: deliveryId)
        }
    }
}

/// Applies merchant events: each recorded once per tenant and provider, its rules run inside
/// the transaction that records it.
struct MerchantEventProcessor: Sendable {
    let database: Database
    let sealer: SecretSealer
    /// Queue each minted license's mail to its buyer.
    var mailBuyers = false

    func apply(
        _ event: MerchantEvent, provider: MerchantProvider, tenantId: String, now: Int64, sealEvent: @escaping @Sendable () throws -> String?, retriedBy: AuditActor? = nil
    ) async throws -> MerchantOutcome {
        let (sealer, mailBuyers) = (self.sealer, self.mailBuyers)
        return try await database.recordMerchantEvent(event, provider: provider, tenantId: tenantId, now: now, sealEvent: sealEvent, retriedBy: retriedBy) { ledger in
            try await MerchantEventRules(event: event, ledger: ledger, sealer: sealer, mailBuyers: mailBuyers).apply()
        }
    }
}
