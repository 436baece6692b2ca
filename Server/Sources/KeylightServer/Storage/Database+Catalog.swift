import SQLKit

extension Database {
    // MARK: Tenants

    /// Inserts a tenant; false when the id is taken.
    /// Inserts a tenant with its first signing key; false when the id is taken.
    func insertTenant(_ tenant: Tenant, firstSigningKey: SigningKeyRow, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let inserted = try await db.raw("""
                INSERT INTO tenants (id, name, created_at) VALUES (\(bind: tenant.id), \(bind: tenant.name), \(bind: tenant.createdAt))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            guard inserted != nil else { return false }
            try await Self.audit(db, at: tenant.createdAt, actor: actor, action: "tenant.create", tenantId: tenant.id, target: tenant.id, details: ["name": tenant.name])
            _ = try await Self.insertFirstSigningKey(firstSigningKey, on: db, actor: actor)
            return true
        }
    }

    public func tenant(id: String) async throws -> Tenant? {
        try await sql.raw("SELECT id, name, created_at FROM tenants WHERE id = \(bind: id)")
            .first(decoding: Tenant.self)
    }

    public func tenants() async throws -> [Tenant] {
        try await sql.raw("SELECT id, name, created_at FROM tenants ORDER BY id")
            .all(decoding: Tenant.self)
    }

    // MARK: Products

    static let productColumns: SQLQueryString = "tenant_id, id, name, key_prefix, sdk_key_hash, trial_duration_days, free_tier_enabled, created_at, updated_at, portal_enabled, sdk_key_required, appstore_bundle_id, appstore_environments"

    /// Inserts a product; false when the id is taken within its tenant.
    func insertProduct(_ product: Product, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let inserted = try await db.raw("""
                INSERT INTO products (\(Self.productColumns)) VALUES (
                    \(bind: product.tenantId), \(bind: product.id), \(bind: product.name), \(bind: product.keyPrefix),
                    \(bind: product.sdkKeyHash), \(bind: product.trialDurationDays), \(bind: product.freeTierEnabled),
                    \(bind: product.createdAt), \(bind: product.updatedAt), \(bind: product.portalEnabled), \(bind: product.sdkKeyRequired),
                    \(bind: product.appStoreBundleId), \(bind: product.appStoreEnvironments))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            guard inserted != nil else { return false }
            try await Self.audit(db, at: product.createdAt, actor: actor, action: "product.create", tenantId: product.tenantId, target: product.id, details: [
                "name": product.name, "key_prefix": product.keyPrefix,
                "trial_duration_days": "\(product.trialDurationDays)", "free_tier_enabled": "\(product.freeTierEnabled)",
                "sdk_key_required": "\(product.sdkKeyRequired)",
            ])
            return true
        }
    }

    /// Changes a product's trial length and free tier; nil when there is no such product.
    /// What a product update does to its App Store app: absent keeps it; `.some(nil)` removes it.
    struct AppStoreSettingsChange: Sendable {
        var bundleId: String??
        var environments: String??
    }

    func updateProduct(
        tenantId: String, id: String, name: String?, trialDurationDays: Int?, freeTierEnabled: Bool?, portalEnabled: Bool? = nil, sdkKeyRequired: Bool? = nil,
        appStore: AppStoreSettingsChange = AppStoreSettingsChange(), now: Int64, actor: AuditActor
    ) async throws -> Product? {
        // Nil binds keep a column; an explicit flag clears it.
        let (bundle, clearBundle) = (appStore.bundleId ?? nil, appStore.bundleId.map { $0 == nil } ?? false)
        let (environments, clearEnvironments) = (appStore.environments ?? nil, appStore.environments.map { $0 == nil } ?? false)
        return try await write { db in
            let updated = try await db.raw("""
                UPDATE products SET
                    appstore_bundle_id = CASE WHEN \(bind: clearBundle) THEN NULL ELSE COALESCE(\(bind: bundle), appstore_bundle_id) END,
                    appstore_environments = CASE WHEN \(bind: clearEnvironments) THEN NULL ELSE COALESCE(\(bind: environments), appstore_environments) END,
                    name = COALESCE(\(bind: name), name),
                    trial_duration_days = COALESCE(\(bind: trialDurationDays), trial_duration_days),
                    free_tier_enabled = COALESCE(\(bind: freeTierEnabled), free_tier_enabled),
                    portal_enabled = COALESCE(\(bind: portalEnabled), portal_enabled),
                    sdk_key_required = COALESCE(\(bind: sdkKeyRequired), sdk_key_required),
                    updated_at = \(bind: now)
                WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)
                RETURNING \(Self.productColumns)
                """).first(decoding: Product.self)
            guard let updated else { return nil }
            var details: [String: String] = [:]
            if let name { details["name"] = name }
            if let trialDurationDays { details["trial_duration_days"] = "\(trialDurationDays)" }
            if let freeTierEnabled { details["free_tier_enabled"] = "\(freeTierEnabled)" }
            if let portalEnabled { details["portal_enabled"] = "\(portalEnabled)" }
            if let sdkKeyRequired { details["sdk_key_required"] = "\(sdkKeyRequired)" }
            if let change = appStore.bundleId { details["appstore_bundle_id"] = change ?? "none" }
            if let change = appStore.environments { details["appstore_environments"] = change ?? "Production" }
            try await Self.audit(db, at: now, actor: actor, action: "product.update", tenantId: tenantId, target: id, details: details)
            return updated
        }
    }

    public func product(tenantId: String, id: String) async throws -> Product? {
        try await sql.raw("SELECT \(Self.productColumns) FROM products WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)")
            .first(decoding: Product.self)
    }

    public func products(tenantId: String) async throws -> [Product] {
        try await sql.raw("SELECT \(Self.productColumns) FROM products WHERE tenant_id = \(bind: tenantId) ORDER BY id")
            .all(decoding: Product.self)
    }

    // MARK: Key types

    static let keyTypeColumns: SQLQueryString = "tenant_id, product_id, id, display_name, activation_limit, duration_days, fallback_access, lease_ttl_seconds, entitlements, created_at, stripe_price_id, stripe_mode, offline_lease_days, floating, heartbeat_seconds, overage_percent, updates_days, paddle_price_id, lemonsqueezy_variant_id, polar_product_id, appstore_product_id, expires_from, upgrade_restarts_updates"

    /// Inserts a key type; false when the id is taken within its product.
    func insertKeyType(_ keyType: KeyType, actor: AuditActor) async throws -> Bool {
        try await write { db in
            let inserted = try await db.raw("""
                INSERT INTO key_types (\(Self.keyTypeColumns)) VALUES (
                    \(bind: keyType.tenantId), \(bind: keyType.productId), \(bind: keyType.id), \(bind: keyType.displayName),
                    \(bind: keyType.activationLimit), \(bind: keyType.durationDays), \(bind: keyType.fallbackAccess),
                    \(bind: keyType.leaseTtlSeconds), \(bind: keyType.entitlements), \(bind: keyType.createdAt),
                    \(bind: keyType.stripePriceId), \(bind: keyType.stripeMode), \(bind: keyType.offlineLeaseDays),
                    \(bind: keyType.floating), \(bind: keyType.heartbeatSeconds), \(bind: keyType.overagePercent), \(bind: keyType.updatesDays),
                    \(bind: keyType.paddlePriceId), \(bind: keyType.lemonSqueezyVariantId), \(bind: keyType.polarProductId), \(bind: keyType.appStoreProductId), \(bind: keyType.expiresFrom?.rawValue), \(bind: keyType.upgradeRestartsUpdates))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            guard inserted != nil else { return false }
            try await Self.audit(db, at: keyType.createdAt, actor: actor, action: "key_type.create", tenantId: keyType.tenantId, target: "\(keyType.productId)/\(keyType.id)", details: [
                "activation_limit": "\(keyType.activationLimit)", "duration_days": keyType.durationDays.map(String.init) ?? "lifetime",
                "fallback_access": "\(keyType.fallbackAccess)", "lease_ttl_seconds": "\(keyType.leaseTtlSeconds)",
                "entitlements": keyType.entitlements, "stripe_price_id": keyType.stripePriceId ?? "none",
                "offline_lease_days": "\(keyType.offlineLeaseDays)", "floating": "\(keyType.floating)",
                "heartbeat_seconds": "\(keyType.heartbeatSeconds)", "overage_percent": "\(keyType.overagePercent)",
                "updates_days": keyType.updatesDays.map(String.init) ?? "unbounded",
                "expires_from": (keyType.expiresFrom ?? .purchase).rawValue,
            ])
            return true
        }
    }

    public func keyType(tenantId: String, productId: String, id: String) async throws -> KeyType? {
        try await sql.raw("""
            SELECT \(Self.keyTypeColumns) FROM key_types
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND id = \(bind: id)
            """).first(decoding: KeyType.self)
    }

    public func keyTypes(tenantId: String, productId: String) async throws -> [KeyType] {
        try await sql.raw("""
            SELECT \(Self.keyTypeColumns) FROM key_types WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) ORDER BY id
            """).all(decoding: KeyType.self)
    }
}
