import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import SQLKit
import Testing

/// One storage implementation, the same behaviour on every database it runs on.
@Suite(.timeLimit(.minutes(6))) struct StorageConformanceTests {
    static let now: Int64 = 1_781_076_246

    static func keyRow(_ tenantId: String, _ kid: String) -> SigningKeyRow {
        SigningKeyRow(tenantId: tenantId, kid: kid, publicKey: "pk-\(kid)", sealedPrivateKey: "sealed", status: .active, createdAt: now, statusChangedAt: now)
    }

    static func catalog(_ db: Database, limit: Int = 3) async throws {
        #expect(try await db.insertTenant(Tenant(id: "acme", name: "Acme", createdAt: now), firstSigningKey: keyRow("acme", "k0"), actor: .adminToken))
        #expect(try await db.insertProduct(Product(tenantId: "acme", id: "app", name: "App", keyPrefix: "ACME", sdkKeyHash: String(repeating: "0", count: 64),
                                                   trialDurationDays: 14, freeTierEnabled: true, createdAt: now, updatedAt: now), actor: .adminToken))
        #expect(try await db.insertKeyType(KeyType(tenantId: "acme", productId: "app", id: "pro", displayName: "Pro", activationLimit: limit, durationDays: nil,
                                                   fallbackAccess: false, leaseTtlSeconds: 604_800, entitlements: "pro,sync", createdAt: now), actor: .adminToken))
    }

    static func license(_ db: Database, email: String? = nil) async throws -> (License, LicenseKey) {
        let key = try LicenseKey.generate(prefix: "ACME")
        let license = License(id: UUID().uuidString.lowercased(), tenantId: "acme", productId: "app", keyTypeId: "pro", keyHash: key.keyHash,
                              maskedKey: key.masked, status: .active, expiresAt: nil, customerEmail: email, activeInstances: 0, createdAt: now, updatedAt: now)
        try await db.insertLicense(license, key: "unused", sealedKey: nil, actor: .adminToken)
        return (license, key)
    }

    static func activate(_ db: Database, _ key: LicenseKey, machine: String?) async throws -> ActivationOutcome {
        try await db.activate(keyHash: key.keyHash, tenantId: "acme", productId: "app", newInstanceId: UUID().uuidString.lowercased(), name: "n",
                              machineHash: machine, existingInstanceId: nil, freeTierInstanceId: nil, now: now, refusal: { _ in nil })
    }

    @Test(arguments: StorageBackend.available)
    func migrationsAndCatalog(backend: StorageBackend) async throws {
        let db = try await backend.open()
        #expect(try await db.migrate(logger: Harness.logger).isEmpty)
        #expect(try await db.appliedMigrations() == Migration.all.map(\.name))
        try await Self.catalog(db)
        #expect(try await !db.insertTenant(Tenant(id: "acme", name: "Again", createdAt: Self.now), firstSigningKey: Self.keyRow("acme", "k9"), actor: .adminToken))
        #expect(try await db.tenant(id: "acme")?.name == "Acme")
        let product = try #require(try await db.product(tenantId: "acme", id: "app"))
        #expect(product.freeTierEnabled && product.trialDurationDays == 14)
        let updated = try await db.updateProduct(tenantId: "acme", id: "app", name: nil, trialDurationDays: 30, freeTierEnabled: false, now: Self.now + 1, actor: .adminToken)
        #expect(updated?.trialDurationDays == 30 && updated?.freeTierEnabled == false && updated?.name == "App")
        #expect(try await db.keyType(tenantId: "acme", productId: "app", id: "pro")?.entitlementCodes == ["pro", "sync"])
        #expect(try await db.keyType(tenantId: "acme", productId: "app", id: "pro")?.durationDays == nil)
        let audit = try await db.auditLog(limit: 10)
        #expect(audit.map(\.action).prefix(5) == ["product.update", "key_type.create", "product.create", "signing_key.create", "tenant.create"])
        #expect(try await db.auditLog(limit: 2, beforeId: audit[1].id).first?.id == audit[2].id)
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func licensesPagingStatusRemintAndImport(backend: StorageBackend) async throws {
        let db = try await backend.open()
        try await Self.catalog(db)
        let (first, key) = try await Self.license(db, email: "a@example.com")
        for _ in 0..<4 { _ = try await Self.license(db, email: "b@example.com") }
        #expect(try await db.license(keyHash: key.keyHash)?.id == first.id)
        let page = try await db.licenses(tenantId: "acme", productId: "app", email: "b@example.com", status: nil, afterId: nil, limit: 3)
        #expect(page.count == 3)
        let rest = try await db.licenses(tenantId: "acme", productId: "app", email: "b@example.com", status: nil, afterId: page.last!.id, limit: 3)
        #expect(rest.count == 1 && !page.map(\.id).contains(rest[0].id))
        let suffix = try await db.licenses(tenantId: "acme", productId: "app", email: nil, status: nil, keySuffix: String(key.text.suffix(4)), afterId: nil, limit: 10)
        #expect(suffix.map(\.id).contains(first.id))
        #expect(try await db.setLicenseStatus(tenantId: "acme", productId: "app", id: first.id, status: .suspended, action: "license.suspend", now: Self.now, actor: .adminToken)?.status == .suspended)
        #expect(try await db.licenses(tenantId: "acme", productId: "app", email: nil, status: .suspended, afterId: nil, limit: 10).map(\.id) == [first.id])
        let newKey = try LicenseKey.generate(prefix: "ACME")
        _ = try await db.remintLicense(tenantId: "acme", productId: "app", id: first.id, keyHash: newKey.keyHash, maskedKey: newKey.masked, sealedKey: nil, now: Self.now, actor: .adminToken)
        #expect(try await db.license(keyHash: key.keyHash) == nil)
        #expect(try await db.license(keyHash: newKey.keyHash)?.id == first.id)

        let imported = (0..<1_200).map { _ in
            let key = try! LicenseKey.generate(prefix: "ACME")
            return License(id: UUID().uuidString.lowercased(), tenantId: "acme", productId: "app", keyTypeId: "pro", keyHash: key.keyHash, maskedKey: key.masked,
                           status: .active, expiresAt: nil, customerEmail: nil, activeInstances: 0, createdAt: Self.now, updatedAt: Self.now)
        }
        try await db.importLicenses(imported, tidy: true)
        #expect(try await db.sql.raw("SELECT COUNT(*) AS n FROM licenses").first(decodingColumn: "n", as: Int.self) == 1_205)
        #expect(try await db.license(keyHash: imported[777].keyHash)?.id == imported[777].id)
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func activationCapHoldsUnderConcurrency(backend: StorageBackend) async throws {
        try await backend.with(poolSize: 8) { db in
            try await Self.catalog(db, limit: 3)
            let (license, key) = try await Self.license(db)
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        switch try await Self.activate(db, key, machine: "m\(index)") {
                        case .activated: "activated"
                        case .limitReached: "limit"
                        default: "other"
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "activated" }.count == 3)
            #expect(outcomes.filter { $0 == "limit" }.count == 57)
            #expect(try await db.instances(licenseId: license.id).filter(\.active).count == 3)
            #expect(try await db.license(keyHash: key.keyHash)?.activeInstances == 3)

            // Deactivation frees exactly one slot, once.
            let instance = try #require(try await db.instances(licenseId: license.id).first)
            #expect(try await db.deactivate(keyHash: key.keyHash, licenseId: nil, tenantId: "acme", productId: "app", instanceId: instance.id, now: Self.now, change: .app) == .deactivated)
            #expect(try await db.deactivate(keyHash: key.keyHash, licenseId: nil, tenantId: "acme", productId: "app", instanceId: instance.id, now: Self.now, change: .app) == .alreadyInactive)
            #expect(try await db.license(keyHash: key.keyHash)?.activeInstances == 2)
        }
    }

    @Test(arguments: StorageBackend.available)
    func sameMachineRacesShareOneInstance(backend: StorageBackend) async throws {
        let db = try await backend.open(poolSize: 8)
        try await Self.catalog(db, limit: 10)
        let (_, key) = try await Self.license(db)
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    do {
                        switch try await Self.activate(db, key, machine: "same") {
                        case .activated(let id, _), .existing(let id, _): return id
                        case let other: return "unexpected \(other)"
                        }
                    } catch where StorageError.isUniqueViolation(error) {
                        return "unique-violation"  // the service retries these; the database refused the duplicate
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        // Every attempt is accounted for: the one instance, or a refused duplicate; nothing else.
        #expect(ids.count == 30 && !ids.contains { $0.hasPrefix("unexpected") }, "\(ids)")
        #expect(Set(ids.filter { $0 != "unique-violation" }).count == 1)
        #expect(try await db.license(keyHash: key.keyHash)?.activeInstances == 1)
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func grantKeylessTouchSettingsAndSecrets(backend: StorageBackend) async throws {
        let db = try await backend.open()
        try await Self.catalog(db)
        let (_, key) = try await Self.license(db)
        guard case .activated(let instance, _) = try await Self.activate(db, key, machine: "m") else { Issue.record("not activated"); return }
        let grant = try #require(try await db.grant(keyHash: key.keyHash, tenantId: "acme", productId: "app", instanceId: instance))
        #expect(grant.instanceActive == true && grant.entitlementCodes == ["pro", "sync"] && grant.activationLimit == 3 && grant.status == .active)
        #expect(try await db.grant(keyHash: key.keyHash, tenantId: "acme", productId: "other", instanceId: instance) == nil)
        try await db.touchInstances([instance: Self.now + 50])
        try await db.touchInstances([instance: Self.now + 10])  // never moves backwards
        #expect(try await db.instance(id: instance)?.lastValidatedAt == Self.now + 50)
        let k1 = KeylessInstall(tenantId: "acme", productId: "app", instanceId: "k1")
        try await db.touchInstances([:], keyless: [k1: KeylessSighting(state: "trial", machineHash: "mh", at: Self.now)])
        try await db.touchInstances([:], keyless: [k1: KeylessSighting(state: "free_tier", machineHash: nil, at: Self.now + 5)])
        // A late flush of an older sighting never moves the install back.
        try await db.touchInstances([:], keyless: [k1: KeylessSighting(state: "trial", machineHash: nil, at: Self.now + 1)])
        let row = try #require(try await db.sql.raw("SELECT state, machine_hash, first_seen_at, last_seen_at FROM keyless_installs").first())
        #expect(try row.decode(column: "state", as: String.self) == "free_tier")
        #expect(try row.decode(column: "machine_hash", as: String?.self) == "mh")
        #expect(try row.decode(column: "first_seen_at", as: Int64.self) == Self.now)
        #expect(try row.decode(column: "last_seen_at", as: Int64.self) == Self.now + 5)
        // Pruning drops only unconverted installs last seen before the cutoff.
        let k2 = KeylessInstall(tenantId: "acme", productId: "app", instanceId: "k2")
        try await db.touchInstances([:], keyless: [k2: KeylessSighting(state: "trial", machineHash: nil, at: Self.now - 100)])
        #expect(try await db.pruneKeyless(seenBefore: Self.now) == 1)
        #expect(try await db.sql.raw("SELECT instance_id FROM keyless_installs").all(decodingColumn: "instance_id", as: String.self) == ["k1"])
        #expect(try await db.settingCreatingIfAbsent("x", value: "1") == ("1", true))
        #expect(try await db.settingCreatingIfAbsent("x", value: "2") == ("1", false))
        // Nothing stored and no webhook secret: nothing to keep, nothing written.
        #expect(try await db.setStripeSettings(tenantId: "acme", sealedWebhookSecret: nil, secretKey: .set("s0"), now: Self.now, actor: .adminToken) == false)
        #expect(try await db.stripeSettings(tenantId: "acme") == nil)
        #expect(try await db.setStripeSettings(tenantId: "acme", sealedWebhookSecret: "sealed-1", secretKey: .set("s"), now: Self.now, actor: .adminToken))
        // A nil webhook secret and .keep leave both stored values alone.
        #expect(try await db.setStripeSettings(tenantId: "acme", sealedWebhookSecret: "sealed-2", secretKey: .keep, now: Self.now, actor: .adminToken))
        #expect(try await db.stripeSettings(tenantId: "acme")?.sealedWebhookSecret == "sealed-2")
        #expect(try await db.stripeSettings(tenantId: "acme")?.sealedSecretKey == "s")
        #expect(try await db.setStripeSettings(tenantId: "acme", sealedWebhookSecret: nil, secretKey: .remove, now: Self.now, actor: .adminToken))
        #expect(try await db.stripeSettings(tenantId: "acme")?.sealedWebhookSecret == "sealed-2")
        #expect(try await db.stripeSettings(tenantId: "acme")?.sealedSecretKey == nil)
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func signingKeysAndResponseKeys(backend: StorageBackend) async throws {
        let db = try await backend.open()
        try await Self.catalog(db)  // acme signs with k0
        #expect(try await db.insertTenant(Tenant(id: "beta", name: "Beta", createdAt: Self.now), firstSigningKey: Self.keyRow("beta", "k0"), actor: .adminToken))
        func keys(_ tenant: String) async throws -> [String] {
            try await db.signingKeyRows(tenantId: tenant).map { "\($0.kid):\($0.status.rawValue)" }
        }
        #expect(try await !db.insertFirstSigningKey(Self.keyRow("acme", "k2"), actor: .system))  // one active key only
        // Prepare publishes a next key; preparing again returns it instead of replacing it.
        #expect(try await db.prepareSigningKey(Self.keyRow("acme", "k1"), actor: .adminToken).status == .next)
        #expect(try await db.prepareSigningKey(Self.keyRow("acme", "kx"), actor: .adminToken).kid == "k1")
        #expect(try await keys("acme") == ["k0:active", "k1:next"])
        // Rotation promotes the prepared key, and touches no other tenant.
        let first = try await db.rotateSigningKeys(fresh: ["acme": Self.keyRow("acme", "k9")], order: ["acme"], now: Self.now, actor: .adminToken)
        #expect(first == [RotationOutcome(tenantId: "acme", kid: "k1", publicKey: "pk-k1", promotedNext: true)])
        #expect(try await keys("acme") == ["k0:grace", "k1:active"])
        #expect(try await keys("beta") == ["k0:active"])
        // Without a prepared key, a rotation installs the fresh one.
        let both = try await db.rotateSigningKeys(fresh: ["acme": Self.keyRow("acme", "k3"), "beta": Self.keyRow("beta", "k3")], order: ["acme", "beta"],
                                                  now: Self.now + 1, actor: .adminToken)
        #expect(both.map(\.kid) == ["k3", "k3"] && both.allSatisfy { !$0.promotedNext })
        #expect(try await keys("acme") == ["k0:grace", "k1:grace", "k3:active"])
        #expect(try await keys("beta") == ["k0:grace", "k3:active"])
        // Retiring: never the key that signs; per tenant, or everywhere.
        #expect(try await db.retireSigningKey(kid: "k3", tenantId: "acme", now: Self.now, actor: .adminToken) == .active)
        #expect(try await db.retireSigningKey(kid: "k3", tenantId: nil, now: Self.now, actor: .adminToken) == .active)
        #expect(try await db.retireSigningKey(kid: "k0", tenantId: "acme", now: Self.now, actor: .adminToken) == .retired)
        #expect(try await keys("beta") == ["k0:grace", "k3:active"])
        #expect(try await db.retireSigningKey(kid: "k0", tenantId: nil, now: Self.now, actor: .adminToken) == .retired)
        #expect(try await keys("beta") == ["k0:retired", "k3:active"])
        #expect(try await db.retireSigningKey(kid: "k0", tenantId: nil, now: Self.now, actor: .adminToken) == .alreadyRetired)
        #expect(try await db.retireSigningKey(kid: "nope", tenantId: nil, now: Self.now, actor: .adminToken) == .notFound)
        #expect(try await db.retireSigningKey(kid: "k1", tenantId: "beta", now: Self.now, actor: .adminToken) == .notFound)

        let key = ResponseSigningKeyRow(id: "r1", rootKid: "k3", createdDay: 100, expiryDay: 103, sealedPrivateKey: "s", certificate: "c1")
        try await db.insertResponseSigningKey(key, now: Self.now)
        var rival = key
        rival.id = "r2"
        rival.certificate = "c2"
        try await db.insertResponseSigningKey(rival, now: Self.now)  // same root and day: the first stays
        #expect(try await db.responseSigningKey(rootKid: "k3", createdDay: 100)?.certificate == "c1")
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func failedTransactionsRollBackAndDuplicatesAreRecognised(backend: StorageBackend) async throws {
        let db = try await backend.open()
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await db.write { tx in
                try await tx.raw("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'T', 0)").run()
                throw Boom()
            }
        }
        #expect(try await db.tenant(id: "t1") == nil)
        try await db.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('t2', 'T', 0)").run()
        do {
            try await db.sql.raw("INSERT INTO tenants (id, name, created_at) VALUES ('t2', 'T', 0)").run()
            Issue.record("duplicate accepted")
        } catch {
            #expect(StorageError.isUniqueViolation(error))
        }
        await db.close()
    }

    @Test(arguments: StorageBackend.available)
    func twoHundredConcurrentActivationsThroughTheServer(backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            let seed = try await client.seed(limit: 3)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    group.addTask { try await client.activate(seed, machine: "machine-\(index)").status.code }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let histogram = Dictionary(statuses.map { ($0, 1) }, uniquingKeysWith: +)
            // The cap is the point: exactly 3 activations hold slots. The rest are refused at the cap
            // (409) or, when the machine is loaded (a CI run of every suite at once on 2 cores), shed
            // by the bounded pool wait (503, documented); nothing else. Under that load an activation
            // can commit and still answer 503 (its answer missed a deadline): a retry from that
            // machine finds its slot. So 200s are at most 3, and the slots exactly 3.
            if statuses.contains(503) {
                #expect(statuses.filter { $0 == 200 }.count <= 3, "\(histogram)")
            } else {
                #expect(statuses.filter { $0 == 200 }.count == 3, "\(histogram)")
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 409 || $0 == 503 }, "\(histogram)")
            #expect(statuses.contains(409), "\(histogram)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 3)
        }
    }
}
