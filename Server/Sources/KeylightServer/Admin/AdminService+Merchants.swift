import Foundation
import KeylightCore

/// `PUT /admin/v1/tenants/{t}/paddle`. Absent or blank fields keep what is stored;
/// `"api_key": null` removes the API key.
struct PaddleSettingsRequest: Decodable, Sendable {
    /// The notification destination's secret key (`pdl_ntfset_…`).
    var webhook_secret: String?
    /// A Paddle API key with read access to customers: looks up buyers' addresses.
    var api_key: String??
    /// `production` (default) or `sandbox`: which Paddle API the lookup calls.
    var environment: String?

    enum CodingKeys: String, CodingKey { case webhook_secret, api_key, environment }

    init(webhookSecret: String? = nil, apiKey: String?? = nil, environment: String? = nil) {
        webhook_secret = webhookSecret
        api_key = apiKey
        self.environment = environment
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        webhook_secret = try container.decodeIfPresent(String.self, forKey: .webhook_secret)
        if container.contains(.api_key) {
            api_key = .some(try container.decodeNil(forKey: .api_key) ? nil : try container.decode(String.self, forKey: .api_key))
        }
        environment = try container.decodeIfPresent(String.self, forKey: .environment)
    }
}

/// `PUT /admin/v1/tenants/{t}/lemonsqueezy`.
struct LemonSqueezySettingsRequest: Decodable, Sendable {
    /// The signing secret typed into the store's webhook.
    var webhook_secret: String?
    /// Whether test-mode orders mint licenses (default false).
    var accept_test_mode: Bool?
}

/// `PUT /admin/v1/tenants/{t}/polar`.
struct PolarSettingsRequest: Decodable, Sendable {
    /// The endpoint's secret (`whsec_…`).
    var webhook_secret: String?
}

extension AdminService {
    /// The tenant's settings for `provider`; 404 when there are none.
    func merchantSettings(tenantId: String, provider: MerchantProvider) async throws -> MerchantSettings {
        _ = try await requireTenant(tenantId)
        guard let settings = try await database.merchantSettings(tenantId: tenantId, provider: provider) else {
            throw APIError.notFound("\(provider.displayName) settings")
        }
        return settings
    }

    /// Stores the tenant's settings for `provider`, secrets sealed under the master key.
    func setMerchantSettings(
        tenantId: String, provider: MerchantProvider, webhookSecret: String?, apiKey: String?? = nil,
        environment: String? = nil, acceptTestMode: Bool? = nil, actor: AuditActor
    ) async throws -> MerchantSettings {
        _ = try await requireTenant(tenantId)
        let secret = try Field.optional(webhookSecret.flatMap { $0.isEmpty ? nil : $0 }, "webhook_secret", max: 256)
        if provider == .lemonSqueezy, let secret, secret.unicodeScalars.count < 6 {
            throw APIError.invalidRequest("Field webhook_secret must be at least 6 characters (Lemon Squeezy's own minimum).")
        }
        var keyChange = StripeSecretChange.keep
        switch apiKey {
        case .none: break
        case .some(.none): keyChange = .remove
        case .some(.some(let value)):
            if !value.isEmpty {
                let key = try Field.required(value, "api_key", max: 256)
                keyChange = .set(try sealer.seal(Data(key.utf8), context: provider.apiKeyContext(tenantId: tenantId)))
            }
        }
        let environment = try environment.map { value throws(APIError) -> String in
            guard value == "production" || value == "sandbox" else { throw APIError.invalidRequest("Field environment must be production or sandbox.") }
            return value
        }
        guard try await database.setMerchantSettings(
            tenantId: tenantId, provider: provider,
            sealedWebhookSecret: try secret.map { try sealer.seal(Data($0.utf8), context: provider.webhookSecretContext(tenantId: tenantId)) },
            apiKey: keyChange, environment: environment, acceptTestMode: acceptTestMode, now: clock.unixSeconds, actor: actor
        ) else {
            throw APIError.conflict("Missing field webhook_secret (required until one is stored).")
        }
        return try await merchantSettings(tenantId: tenantId, provider: provider)
    }

    func deleteMerchantSettings(tenantId: String, provider: MerchantProvider, actor: AuditActor) async throws {
        _ = try await requireTenant(tenantId)
        guard try await database.deleteMerchantSettings(tenantId: tenantId, provider: provider, now: clock.unixSeconds, actor: actor) else {
            throw APIError.notFound("\(provider.displayName) settings")
        }
    }

    /// Received events with `outcome` (nil: all), newest first.
    func merchantEvents(tenantId: String, provider: MerchantProvider, outcome: String?, limit: Int) async throws -> [MerchantEventRecord] {
        _ = try await requireTenant(tenantId)
        if let outcome, MerchantOutcome(rawValue: outcome) == nil {
            throw APIError.invalidRequest("Unknown outcome; known: \(MerchantOutcome.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        return try await database.merchantEvents(tenantId: tenantId, provider: provider, outcome: outcome, limit: limit)
    }

    /// Applies a kept event again (after a key type was mapped), exactly as if it had been delivered again.
    func retryMerchantEvent(tenantId: String, provider: MerchantProvider, id: String, actor: AuditActor) async throws -> MerchantOutcome {
        let settings = try await merchantSettings(tenantId: tenantId, provider: provider)
        guard id.utf8.count <= 255, let sealed = try await database.sealedMerchantEvent(tenantId: tenantId, provider: provider, id: id) else {
            throw APIError.notFound("Retryable \(provider.displayName) event")
        }
        let raw = Array(try sealer.open(sealed, context: provider.eventContext(tenantId: tenantId, eventId: id)))
        guard let event = provider.read(raw, deliveryId: id, settings: settings), event.id == id else { throw APIError.internalError }
        return try await merchantEvents
            .apply(event, provider: provider, tenantId: tenantId, now: clock.unixSeconds, sealEvent: { sealed }, retriedBy: actor)
    }
}
