import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import NIOConcurrencyHelpers
import SQLKit
import Testing

/// The floating cap under a race: 300 activations of a 5-seat license while its seats expire
/// (the clock runs 1 s per 2 ms against a 10 s heartbeat) and sweeps run concurrently. On
/// PostgreSQL two separate connection pools share the database, as two server processes do.
@Suite(.timeLimit(.minutes(6))) struct FloatingRaceTests {
    static let limit = 5

    @Test(arguments: StorageBackend.available)
    func threeHundredActivationsAtFiveSeatsWhileSeatsExpire(backend: StorageBackend) async throws {
        let first: Database
        let second: Database
        switch backend {
        case .sqliteMemory, .sqliteFile:
            // SQLite serves one process (several processes share PostgreSQL): one pool.
            first = try await backend.open(poolSize: 8)
            second = first
        case .postgres:
            let url = try #require(StorageBackend.postgresURL)
            let schema = try await StorageBackend.freshSchema(url: url)
            first = try await PostgresStorage.open(url: url, poolSize: 8, searchPath: [schema], connectionWait: .seconds(60), logger: Harness.logger)
            second = try await PostgresStorage.open(url: url, poolSize: 8, searchPath: [schema], connectionWait: .seconds(60), logger: Harness.logger)
            do {
                _ = try await first.migrate(logger: Harness.logger)
            } catch {
                await first.close()
                await second.close()
                throw error
            }
        }
        do {
            try await Self.race(first, second)
        } catch {
            if backend == .postgres { await second.close() }
            await first.close()
            throw error
        }
        if backend == .postgres { await second.close() }
        await first.close()
    }

    static func race(_ first: Database, _ second: Database) async throws {
        let now = StorageConformanceTests.now
        #expect(try await first.insertTenant(Tenant(id: "acme", name: "Acme", createdAt: now), firstSigningKey: StorageConformanceTests.keyRow("acme", "k0"), actor: .adminToken))
        #expect(try await first.insertProduct(Product(tenantId: "acme", id: "app", name: "App", keyPrefix: "ACME", sdkKeyHash: String(repeating: "0", count: 64),
                                                      trialDurationDays: 0, freeTierEnabled: false, createdAt: now, updatedAt: now), actor: .adminToken))
        #expect(try await first.insertKeyType(KeyType(tenantId: "acme", productId: "app", id: "pro", displayName: "Site", activationLimit: limit, durationDays: nil,
                                                      fallbackAccess: false, leaseTtlSeconds: 604_800, entitlements: "pro", createdAt: now,
                                                      floating: true, heartbeatSeconds: 10), actor: .adminToken))
        let (license, key) = try await StorageConformanceTests.license(first)

        let clock = NIOLockedValueBox<Int64>(now)
        let done = NIOLockedValueBox(false)
        let highest = NIOLockedValueBox(0)
        let sweptBySweeper = NIOLockedValueBox(0)

        let outcomes = try await withThrowingTaskGroup(of: [String].self) { group in
            // The clock: 1 s every 2 ms, so a seat dies about every 20 ms unless renewed.
            group.addTask {
                while !done.withLockedValue({ $0 }) {
                    clock.withLockedValue { $0 += 1 }
                    try await Task.sleep(for: .milliseconds(2))
                }
                return []
            }
            // Sweeps from both "processes".
            group.addTask {
                var turn = 0
                while !done.withLockedValue({ $0 }) {
                    turn += 1
                    let freed = try await (turn.isMultiple(of: 2) ? first : second).expireFloatingSeats(now: clock.withLockedValue { $0 })
                    sweptBySweeper.withLockedValue { $0 += freed }
                    try await Task.sleep(for: .milliseconds(3))
                }
                return []
            }
            // An observer: committed live seats never exceed the limit.
            group.addTask {
                while !done.withLockedValue({ $0 }) {
                    let live = try await first.sql.raw("SELECT COUNT(*) AS n FROM instances WHERE license_id = \(bind: license.id) AND active")
                        .first(decodingColumn: "n", as: Int.self) ?? 0
                    highest.withLockedValue { $0 = max($0, live) }
                    try await Task.sleep(for: .milliseconds(1))
                }
                return []
            }
            // 300 devices, in waves of 30 at once, alternating between the two pools; a few
            // validate once after activating (a heartbeat racing the sweep).
            group.addTask {
                var results: [String] = []
                for wave in 0..<10 {
                    let waveResults = try await withThrowingTaskGroup(of: String.self) { devices in
                        for index in 0..<30 {
                            let device = wave * 30 + index
                            devices.addTask {
                                let db = device.isMultiple(of: 2) ? first : second
                                let at = clock.withLockedValue { $0 }
                                let outcome = try await db.activate(
                                    keyHash: key.keyHash, tenantId: "acme", productId: "app", newInstanceId: UUID().uuidString.lowercased(), name: "d\(device)",
                                    machineHash: "machine-\(device)", existingInstanceId: nil, freeTierInstanceId: nil, now: at, refusal: { _ in nil }
                                )
                                switch outcome {
                                case .activated(let id, _):
                                    if device.isMultiple(of: 3) {
                                        _ = try await db.holdSeat(licenseId: license.id, tenantId: "acme", instanceId: id, heartbeat: 10, now: clock.withLockedValue { $0 })
                                    }
                                    return "activated"
                                case .limitReached: return "limit"
                                default: return "other"
                                }
                            }
                        }
                        return try await devices.reduce(into: [String]()) { $0.append($1) }
                    }
                    results += waveResults
                    try await Task.sleep(for: .milliseconds(15))
                }
                done.withLockedValue { $0 = true }
                return results
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }

        let activated = outcomes.filter { $0 == "activated" }.count
        let refused = outcomes.filter { $0 == "limit" }.count
        #expect(activated + refused == 300, "\(outcomes.filter { $0 == "other" }.count) other outcomes")
        // Seats did expire and were reused, and the cap still refused some.
        #expect(activated > limit && refused > 0, "activated \(activated), refused \(refused)")
        #expect(highest.withLockedValue { $0 } <= limit, "observed \(highest.withLockedValue { $0 }) live seats")

        let instances = try await first.instances(licenseId: license.id)
        let live = instances.filter(\.active)
        #expect(instances.count == activated)
        #expect(live.count <= limit)
        // The counter the cap reads is exactly the live seats, and every freed seat was freed once.
        #expect(try await first.license(keyHash: key.keyHash)?.activeInstances == live.count)
        #expect(instances.filter { !$0.active }.allSatisfy { $0.deactivatedAt != nil && $0.seatExpiresAt == nil })
        let expiries = try await first.sql.raw("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'instance.expire' AND target = \(bind: license.id)")
            .first(decodingColumn: "n", as: Int.self) ?? -1
        #expect(expiries == activated - live.count)
        #expect(sweptBySweeper.withLockedValue { $0 } <= expiries)

        // Afterwards one sweep past every deadline frees the rest, and the cap is whole again.
        let remaining = try await first.expireFloatingSeats(now: clock.withLockedValue { $0 } + 11)
        #expect(remaining == live.count)
        #expect(try await first.license(keyHash: key.keyHash)?.activeInstances == 0)
        print("floating race: \(activated) activated, \(refused) refused, \(expiries) seats expired, at most \(highest.withLockedValue { $0 }) live seats seen")
    }
}
