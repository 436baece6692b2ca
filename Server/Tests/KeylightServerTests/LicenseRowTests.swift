import Foundation
@testable import KeylightServer
import SQLKit
import Testing

/// ``License/init(row:)`` (the activation's hot path) reads every row as sql-kit's `Decodable`
/// path does, on every database.
@Suite(.timeLimit(.minutes(3))) struct LicenseRowTests {
    typealias Conformance = StorageConformanceTests

    private static func license(_ index: Int, _ fill: (inout License) -> Void) -> License {
        var license = License(
            id: "lic-\(index)", tenantId: "acme", productId: "app", keyTypeId: "pro", keyHash: String(repeating: "\(index % 10)", count: 64),
            maskedKey: "ACME-****-\(index)", status: .active, expiresAt: nil, customerEmail: nil, activeInstances: index,
            createdAt: Conformance.now + Int64(index), updatedAt: Conformance.now + Int64(2 * index)
        )
        fill(&license)
        return license
    }

    @Test(arguments: StorageBackend.available)
    func readsAsDecodableDoes(backend: StorageBackend) async throws {
        try await backend.with { db in
            try await Conformance.catalog(db)
            let licenses = [
                Self.license(1) { _ in },
                Self.license(2) { license in
                    license.status = .suspended
                    license.expiresAt = Conformance.now + 86_400
                    license.customerEmail = "buyer@example.com"
                    license.updatesUntil = Conformance.now + 365 * 86_400
                    license.paymentSource = "stripe"
                    license.paymentOrderId = "cs_test_1"
                    license.activationLimitOverride = 7
                    license.entitlementsAdded = "extra,more"
                    license.note = "a note with 'quotes' and \u{1F511}"
                    license.startsOnActivationFlag = false
                },
                Self.license(3) { license in
                    license.status = .revoked
                    license.startsOnActivationFlag = true
                    license.activationLimitOverride = 0
                },
            ]
            for license in licenses {
                try await db.insertLicense(license, key: "unused", sealedKey: nil, actor: .adminToken)
            }
            for license in licenses {
                let query: SQLQueryString = "SELECT \(Database.licenseColumns) FROM licenses WHERE id = \(bind: license.id)"
                let expected = try #require(try await db.sql.raw(query).first(decoding: License.self))
                let read = try #require(try await db.sql.raw(query).firstLicense())
                #expect(read == expected)
                #expect(read == license)
            }
            // Optional columns left out of a statement are nil, as `decodeIfPresent` reads them;
            // a required one left out fails in both.
            let partial: SQLQueryString = """
                SELECT id, tenant_id, product_id, key_type_id, key_hash, masked_key, status, active_instances, created_at, updated_at
                FROM licenses WHERE id = 'lic-2'
                """
            let expected = try #require(try await db.sql.raw(partial).first(decoding: License.self))
            let read = try #require(try await db.sql.raw(partial).firstLicense())
            #expect(read == expected && read.expiresAt == nil && read.note == nil && read.status == .suspended)
            let missingStatus: SQLQueryString = "SELECT id, tenant_id, product_id, key_type_id, key_hash, masked_key FROM licenses WHERE id = 'lic-1'"
            await #expect(throws: (any Error).self) { _ = try await db.sql.raw(missingStatus).first(decoding: License.self) }
            await #expect(throws: (any Error).self) { _ = try await db.sql.raw(missingStatus).firstLicense() }
        }
    }
}
