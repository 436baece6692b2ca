import Foundation
import KeylightCore
@testable import KeylightServer
import KeylightServerTestSupport
import SQLKit
import Testing

/// Issue 52: a trial install that converts on the day it was seen is one device in every figure
/// (the report, the live series and the stored roll-up), counted as the licensed device it became.
@Suite(.timeLimit(.minutes(6))) struct InsightsConversionTests {
    @Test(arguments: StorageBackend.available) func aConvertedTrialIsOneDevice(backend: StorageBackend) async throws {
        var harness = try await Harness.on(backend)
        harness.configuration.activityFlushInterval = .seconds(3_600)
        try await harness.run { client in
            let seed = try await client.seed(limit: 3)
            let day = InsightsTests.day(client)
            #expect(try await client.sdk("keyless", ["instance_id": "trial-1", "state": "trial", "app_version": "1.0", "platform": "macOS"], seed: seed).status == .ok)
            try await InsightsTests.flush(client)
            client.clock.advance(by: 600)
            let activation = try await client.sdk("activate", [
                "license_key": seed.licenseKey, "instance_name": "Mac", "machine_hash": "m1", "app_version": "2.0",
                "os_version": "15.1", "platform": "macOS", "free_tier_instance_id": "trial-1",
            ], seed: seed)
            #expect(activation.status == .ok, "\(activation.text)")
            try await InsightsTests.flush(client)
            // Both identities were written: the fix is in the reading, not in losing a row.
            #expect(try await client.count("SELECT COUNT(*) AS n FROM device_days") == 2)

            let date = CivilDay.format(day)
            let report = try await client.admin(.get, "/tenants/acme/products/app/insights?by=app_version&window=1&from=\(date)&to=\(date)")
            #expect(report.status == .ok, "\(report.text)")
            let rows = try #require(report["active_devices"] as? [[String: Any]])
            #expect(rows.count == 1 && rows.first?["value"] as? String == "2.0", "\(rows)")
            #expect(rows.first?["devices"] as? Int == 1 && rows.first?["licensed"] as? Int == 1 && rows.first?["keyless"] as? Int == 0, "\(rows)")
            let series = try #require(report["series"] as? [[String: Any]])
            let points = try #require(series.first?["devices"] as? [[String: Any]])
            #expect(points.compactMap { $0["devices"] as? Int }.reduce(0, +) == 1, "\(series)")

            // Rolled up for good two days on: one device stored for the day.
            client.clock.advance(by: 2 * 86_400 + 3_600)
            await client.server.admin.insights.rollUpAndPrune(logger: Harness.logger)
            let stored = try await client.count("""
                SELECT CAST(COALESCE(SUM(devices), 0) AS BIGINT) AS n FROM insights_daily
                WHERE window_days = 1 AND dimension = 'app_version' AND day = \(day)
                """)
            #expect(stored == 1)
        }
    }
}
