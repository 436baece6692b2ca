import Foundation
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// One license per App Store purchase, on every database, however many exchanges race.
@Suite(.timeLimit(.minutes(6))) struct AppStoreRaceTests {
    @Test(arguments: StorageBackend.available)
    func fiftyConcurrentExchangesOfOnePurchaseMintOneLicense(backend: StorageBackend) async throws {
        try await backend.with(poolSize: 8) { database in
            try await StorageConformanceTests.catalog(database)
            let keyType = try #require(try await database.keyType(tenantId: "acme", productId: "app", id: "pro"))
            let payload = try #require(EventJSON.parse(Array(#"{"originalTransactionId":"2000000777","transactionId":"2000000777","bundleId":"com.acme.app","productId":"com.acme.app.pro","environment":"Production","signedDate":1781076246000,"expiresDate":1790000000000}"#.utf8)))
            let transaction = try #require(AppStoreTransaction(payload))
            let sealer = SecretSealer.ephemeral()
            let purchase = AppStorePurchase(tenantId: "acme", productId: "app", keyType: keyType, keyPrefix: "ACME", transaction: transaction)
            let keys = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let (license, sealed) = try await database.appStoreLicense(purchase, sealer: sealer, now: 1_781_076_246)
                        return try LicenseKeySeal.open(sealed, licenseId: license.id, with: sealer)
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(keys.count == 1)
            let count = try await database.sql.raw("SELECT COUNT(*) AS n FROM licenses WHERE payment_source = 'appstore'").first(decodingColumn: "n", as: Int.self)
            #expect(count == 1)
            let expires = try await database.sql.raw("SELECT expires_at FROM licenses WHERE payment_source = 'appstore'").first(decodingColumn: "expires_at", as: Int64?.self)
            #expect(expires == 1_790_000_000)
        }
    }
}
