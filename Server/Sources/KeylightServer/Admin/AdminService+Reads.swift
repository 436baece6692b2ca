import KeylightCore
import KeylightSigning

/// What the admin API, the dashboard, the portal and the payment webhooks read, through the same
/// service that makes their changes: no route or controller reaches storage itself.
extension AdminService {
    // MARK: Catalogue

    func tenants() async throws -> [Tenant] { try await database.tenants() }

    /// The tenant, or nil when the id is not one or no tenant has it.
    func tenant(id: String) async throws -> Tenant? {
        guard TenantPath.isValidId(id) else { return nil }
        return try await database.tenant(id: id)
    }

    func products(tenantId: String) async throws -> [Product] { try await database.products(tenantId: tenantId) }

    /// The product, or nil when an id is not one or no product has them.
    func product(tenantId: String, id: String) async throws -> Product? {
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(id) else { return nil }
        return try await database.product(tenantId: tenantId, id: id)
    }

    func keyTypes(tenantId: String, productId: String) async throws -> [KeyType] {
        try await database.keyTypes(tenantId: tenantId, productId: productId)
    }

    func keyType(tenantId: String, productId: String, id: String) async throws -> KeyType? {
        try await database.keyType(tenantId: tenantId, productId: productId, id: id)
    }

    // MARK: Licenses

    /// A license's instances, active or not, oldest first.
    func instances(licenseId: String) async throws -> [Instance] { try await database.instances(licenseId: licenseId) }

    /// Whether the license's key is kept sealed, so it can be mailed again (false for a key minted
    /// before sealing, which can only be reminted).
    func keyRecoverable(licenseId: String) async throws -> Bool { try await database.sealedKey(licenseId: licenseId) != nil }

    func mails(licenseId: String) async throws -> [MailJob] { try await database.mails(licenseId: licenseId) }

    /// The App Store purchase a license was minted from.
    func appStoreOrigin(tenantId: String, licenseId: String) async throws -> (originalTransactionId: String, environment: String)? {
        try await database.appStoreOrigin(tenantId: tenantId, licenseId: licenseId)
    }

    // MARK: Usage

    /// Licenses by status, `now` deciding which have expired.
    func licenseStatusCounts(tenantId: String, productId: String, now: Int64) async throws -> LicenseStatusCounts {
        try await database.licenseStatusCounts(tenantId: tenantId, productId: productId, now: now)
    }

    /// Activations and validations per day, for the `days` days up to `lastDay` (days since 1970).
    func usage(tenantId: String, productId: String, lastDay: Int64, days: Int) async throws -> [(day: Int64, count: UsageCount)] {
        try await database.usage(tenantId: tenantId, productId: productId, lastDay: lastDay, days: days)
    }

    // MARK: Tenant settings and logs

    func webhookEndpoints(tenantId: String) async throws -> [WebhookEndpoint] { try await database.webhookEndpoints(tenantId: tenantId) }

    func webhookDeliveries(tenantId: String, endpointId: String? = nil, limit: Int) async throws -> [WebhookDelivery] {
        try await database.webhookDeliveries(tenantId: tenantId, endpointId: endpointId, limit: limit)
    }

    /// Every signing key's row (public parts only), of one tenant or of all.
    func signingKeyRows(tenantId: String? = nil) async throws -> [SigningKeyRow] {
        if let tenantId { return try await database.signingKeyRows(tenantId: tenantId) }
        return try await database.signingKeyRows()
    }

    func auditLog(_ filter: AuditFilter, limit: Int, beforeId: Int64? = nil) async throws -> [AuditEntry] {
        try await database.auditLog(filter, limit: limit, beforeId: beforeId)
    }

    /// A merchant's settings for the tenant (the webhook secret still sealed).
    func storedMerchantSettings(tenantId: String, provider: MerchantProvider) async throws -> MerchantSettings? {
        try await database.merchantSettings(tenantId: tenantId, provider: provider)
    }

    /// The tenant's Stripe settings, sealed.
    func stripeSettings(tenantId: String) async throws -> (sealedWebhookSecret: String, sealedSecretKey: String?)? {
        try await database.stripeSettings(tenantId: tenantId)
    }

    /// Stripe events kept because no key type sells their price.
    func unappliedStripeEvents(tenantId: String, limit: Int) async throws -> [StripeEventRecord] {
        try await database.stripeEvents(tenantId: tenantId, outcome: StripeOutcome.unknownProduct.rawValue, limit: limit)
    }

    func checkoutKeySet(tenantId: String) async throws -> Bool { try await database.checkoutKeyHash(tenantId: tenantId) != nil }

    // MARK: Payments

    /// Applies Stripe events (webhook deliveries and retries alike).
    var stripeEvents: StripeEventProcessor { StripeEventProcessor(database: database, sealer: sealer, mailBuyers: mailBuyers) }

    /// Applies merchant-of-record events (webhook deliveries and retries alike).
    var merchantEvents: MerchantEventProcessor { MerchantEventProcessor(database: database, sealer: sealer, mailBuyers: mailBuyers) }

    /// Records an App Store notification that changes nothing, once per `uuid`; answers its outcome.
    func ignoreAppStoreNotification(uuid: String, type: String, tenantId: String, reason: String, now: Int64) async throws -> String {
        try await database.ignoreAppStoreNotification(uuid: uuid, type: type, tenantId: tenantId, reason: reason, now: now)
    }

    /// Applies what an App Store notification means to the license of its purchase, once per
    /// `uuid`; answers its outcome.
    func applyAppStoreNotification(uuid: String, type: String, subtype: String?, tenantId: String, transaction: AppStoreTransaction, now: Int64) async throws -> String {
        try await database.applyAppStoreNotification(
            AppStoreNotificationAction(type: type, transaction: transaction, now: now),
            uuid: uuid, type: type, subtype: subtype, tenantId: tenantId, transaction: transaction, now: now
        )
    }

    // MARK: Mail

    /// Queues a "Lost your key?" mail to `to` (the portal). Not audited: the address comes from
    /// anybody; the mail lists the licenses when it is sent, and is dropped then if there are none.
    func mailLostKeys(tenantId: String, to: String) async throws {
        try await database.enqueueLostKeysMail(tenantId: tenantId, to: to, now: clock.unixSeconds)
    }
}
