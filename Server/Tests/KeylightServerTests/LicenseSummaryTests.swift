import Foundation
import KeylightCore
@testable import KeylightServer
import SQLKit
import Testing

/// `activate` and `validate` name the license's customer and its key type (protocol 6.9: an app's
/// license pane), read with the grant, on every database and through SQLite's point reads.
@Suite(.timeLimit(.minutes(6))) struct LicenseSummaryTests {
    static let keyTypeName = "Pro — Team \"Ü\""

    @Test(arguments: StorageBackend.available)
    func activateAndValidateNameTheCustomerAndTheKeyType(backend: StorageBackend) async throws {
        try await Harness.on(backend).run { client in
            // A file database answers validate's license read from a kept statement, off sql-kit.
            #expect((client.database.pointReads is SQLitePointReadDatabase) == (backend == .sqliteFile))
            let seed = try await client.seed(email: "Buyer@Example.com", keyTypeFields: ["display_name": Self.keyTypeName])
            let activated = try await client.activate(seed)
            #expect(activated.status == .ok)
            #expect(activated["customer_email"] as? String == "buyer@example.com" && activated["key_type_name"] as? String == Self.keyTypeName)
            let instance = try #require(activated["instance_id"] as? String)
            let validated = try await client.validate(seed, instance: instance)
            #expect(validated.status == .ok && validated["valid"] as? Bool == true)
            #expect(validated["customer_email"] as? String == "buyer@example.com" && validated["key_type_name"] as? String == Self.keyTypeName)
            // The same machine again: its existing instance, and the same summary.
            let again = try await client.activate(seed)
            #expect(again["instance_id"] as? String == instance && again["customer_email"] as? String == "buyer@example.com")

            // A license without an address says so with null, not by leaving the member out.
            let (key, _) = try await client.mint(seed)
            let bare = try await client.activate(seed, key: key, machine: "machine-2")
            #expect(bare.status == .ok && bare.json.keys.contains("customer_email") && bare["customer_email"] is NSNull)
            #expect(bare["key_type_name"] as? String == Self.keyTypeName)
            let bareValidated = try await client.validate(seed, instance: try #require(bare["instance_id"] as? String), key: key)
            #expect(bareValidated.json.keys.contains("customer_email") && bareValidated["customer_email"] is NSNull)
            #expect(bareValidated["key_type_name"] as? String == Self.keyTypeName)

            // Read with the license each time, never remembered: a corrected address is what the next validate says.
            try await client.database.sql.raw("UPDATE licenses SET customer_email = 'new@example.com' WHERE id = \(bind: seed.licenseId)").run()
            #expect(try await client.validate(seed, instance: instance)["customer_email"] as? String == "new@example.com")
        }
    }
}
