import SQLKit

extension Database {
    /// Frees an instance's slot. Idempotent: an inactive instance stays inactive. `proof`, when
    /// given, must accept the instance (its device key) or nothing changes.
    func deactivate(
        keyHash: String?, licenseId: String?, tenantId: String, productId: String, instanceId: String, now: Int64,
        change: InstanceChange, proof: (@Sendable (Instance) -> Bool)? = nil
    ) async throws -> DeactivationOutcome {
        let lock = lockRows(of: "licenses")
        let outbox = self.outbox
        return try await hotWrite { db in
            var query: SQLQueryString = "SELECT id FROM licenses WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)"
            if let keyHash { query += " AND key_hash = \(bind: keyHash)" }
            if let licenseId { query += " AND id = \(bind: licenseId)" }
            // Neither (protocol 6.7): the instance alone names its license.
            if keyHash == nil, licenseId == nil { query += " AND id = (SELECT license_id FROM instances WHERE id = \(bind: instanceId))" }
            query += lock
            guard let license = try await db.raw(query).first(decodingColumn: "id", as: String.self) else { return .licenseNotFound }
            guard let instance = try await db.raw("""
                SELECT \(Self.instanceColumns) FROM instances WHERE id = \(bind: instanceId) AND license_id = \(bind: license)
                """).first(decoding: Instance.self) else { return .instanceNotFound }
            if let proof, !proof(instance) { return .invalidProof }
            guard instance.active else { return .alreadyInactive }
            try await db.raw("""
                UPDATE instances SET active = \(bind: false), deactivated_at = \(bind: now), seat_expires_at = \(bind: Int64?.none) WHERE id = \(bind: instanceId)
                """).run()
            let updated = try await db.raw("""
                UPDATE licenses SET active_instances = active_instances - 1, updated_at = \(bind: now) WHERE id = \(bind: license)
                RETURNING \(Self.licenseColumns)
                """).first(decoding: License.self)
            try await Self.record(
                ChangeLog(tenantId: tenantId, now: now).instanceReleased(instance, licenseId: license, license: updated, change: change), on: db, outbox: outbox
            )
            return .deactivated
        }
    }

    /// A license's active instances, oldest first (protocol 6.3), by key hash within one product;
    /// nil when no license has that key.
    func activeInstances(keyHash: String, tenantId: String, productId: String) async throws -> (LicenseGrant, [Instance])? {
        guard let grant = try await sql.raw(Self.grantQuery(keyHash: keyHash, tenantId: tenantId, productId: productId, instanceId: nil, lock: ""))
            .firstGrant() else { return nil }
        let instances = try await sql.raw("""
            SELECT \(Self.instanceColumns) FROM instances WHERE license_id = \(bind: grant.licenseId) AND active ORDER BY activated_at, id
            """).all(decoding: Instance.self)
        return (grant, instances)
    }
}
