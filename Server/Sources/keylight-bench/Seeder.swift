import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer

/// Catalogue and licenses for a benchmark server.
enum Seeder {
    struct Seeded {
        var sdkKey: String
        var pairs: URL
    }

    static func seed(base: String, licenses: Int, database: Database, directory: URL, name: String) async throws -> Seeded {
        let admin = AdminClient(base: base, token: "bench-token", http: HTTPClient.shared)
        _ = try await admin.post("/admin/v1/tenants", #"{"id":"bench","name":"Bench"}"#)
        let product = try await admin.post("/admin/v1/tenants/bench/products", #"{"id":"app","name":"App","key_prefix":"BNCH","trial_duration_days":14,"free_tier_enabled":true}"#)
        guard let sdkKey = product["sdk_key"] as? String else { throw BenchError("no sdk key: \(product)") }
        _ = try await admin.post("/admin/v1/tenants/bench/products/app/key-types", #"{"id":"pro","display_name":"Pro","activation_limit":100000,"duration_days":null,"fallback_access":true,"entitlements":["pro"]}"#)
        let now = SystemWallClock().unixSeconds
        let keys = try (0..<licenses).map { _ in try LicenseKey.generate(prefix: "BNCH") }
        try await database.importLicenses(keys.map { key in
            License(id: UUID().uuidString.lowercased(), tenantId: "bench", productId: "app", keyTypeId: "pro", keyHash: key.keyHash, maskedKey: key.masked,
                    status: .active, expiresAt: nil, customerEmail: nil, activeInstances: 0, createdAt: now, updatedAt: now)
        }, tidy: true)
        var pairs: [String] = []
        try await withThrowingTaskGroup(of: String.self) { group in
            for (index, key) in keys.enumerated() {
                if index >= 32 { pairs.append(try await group.next()!) }
                group.addTask {
                    let reply = try await admin.post("/bench/app/activate", #"{"license_key":"\#(key.text)","instance_name":"seed","machine_hash":"seed-\#(index)"}"#, sdkKey: sdkKey)
                    guard let instance = reply["instance_id"] as? String else { throw BenchError("activation failed: \(reply)") }
                    // Validated once before the load, as every active device of a real product has
                    // been that day: the load then measures a device's next validate of the day,
                    // not its first (which writes its `device_days` row). Only the process seeded
                    // remembers that; other processes of a multi-process run write it once more.
                    let validated = try await admin.post("/bench/app/validate", #"{"license_key":"\#(key.text)","instance_id":"\#(instance)"}"#, sdkKey: sdkKey)
                    guard validated["valid"] as? Bool == true else { throw BenchError("seeding validate failed: \(validated)") }
                    return "\(key.text) \(instance)"
                }
            }
            for try await pair in group { pairs.append(pair) }
        }
        let file = directory.appendingPathComponent("\(name)-pairs.txt")
        try Data((pairs.joined(separator: "\n") + "\n").utf8).write(to: file)
        // Written last: its presence says the seeding finished (``kept(directory:name:licenses:)``).
        try Data(sdkKey.utf8).write(to: directory.appendingPathComponent("\(name)-sdk-key.txt"))
        return Seeded(sdkKey: sdkKey, pairs: file)
    }

    /// Validates every pair once (32 at a time), as the seeding does: a process started on a kept
    /// database has not seen its devices today, and without this the first load on it would also
    /// write every device's `device_days` row, which a seeded process does not.
    static func revalidate(base: String, seeded: Seeded) async throws {
        let client = AdminClient(base: base, token: "", http: HTTPClient.shared)
        let lines = try String(contentsOf: seeded.pairs, encoding: .utf8).split(separator: "\n")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, line) in lines.enumerated() {
                if index >= 32 { try await group.next() }
                let parts = line.split(separator: " ")
                guard parts.count == 2 else { throw BenchError("bad line \(index + 1) in \(seeded.pairs.path)") }
                group.addTask {
                    let reply = try await client.post("/bench/app/validate", #"{"license_key":"\#(parts[0])","instance_id":"\#(parts[1])"}"#, sdkKey: seeded.sdkKey)
                    guard reply["valid"] as? Bool == true else { throw BenchError("validate of a kept instance failed: \(reply)") }
                }
            }
            try await group.waitForAll()
        }
    }

    /// What an earlier run seeded in `directory`, or nil when it did not finish seeding there. A
    /// seeding of another size is refused rather than measured under the wrong name.
    static func kept(directory: URL, name: String, licenses: Int) throws -> Seeded? {
        let keyFile = directory.appendingPathComponent("\(name)-sdk-key.txt")
        let pairs = directory.appendingPathComponent("\(name)-pairs.txt")
        guard let key = try? String(contentsOf: keyFile, encoding: .utf8), let text = try? String(contentsOf: pairs, encoding: .utf8) else { return nil }
        let count = text.split(separator: "\n").count
        guard count == licenses else {
            throw BenchError("\(directory.path) holds \(count) seeded licenses, not \(licenses): use another directory or remove it")
        }
        return Seeded(sdkKey: key, pairs: pairs)
    }
}
