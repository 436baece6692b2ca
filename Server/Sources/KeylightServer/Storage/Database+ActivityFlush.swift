import SQLKit

extension Database {
    /// Records validation times and adds usage counts, many at once (the write-behind flush).
    func touchInstances(
        _ times: [String: Int64], usage: [UsageDay: UsageCount] = [:], keyless: [KeylessInstall: KeylessSighting] = [:],
        devices: [InstanceDay: DeviceSighting] = [:], instanceTelemetry: [String: Telemetry] = [:]
    ) async throws {
        guard !times.isEmpty || !usage.isEmpty || !keyless.isEmpty || !devices.isEmpty || !instanceTelemetry.isEmpty else { return }
        let lock = capabilities.rowLockClause
        try await write { db in
            for (install, sighting) in keyless {
                try await Self.storeKeyless(db, install, sighting, lock: lock)
            }
            for (id, at) in times {
                try await db.raw("""
                    UPDATE instances SET last_validated_at = \(bind: at)
                    WHERE id = \(bind: id) AND (last_validated_at IS NULL OR last_validated_at < \(bind: at))
                    """).run()
            }
            try await Self.recordDeviceDays(db, devices.map { (kind: DeviceKind.licensed, deviceId: $0.key.instanceId, sighting: $0.value) })
            for (id, telemetry) in instanceTelemetry {
                try await db.raw("UPDATE instances SET \(Self.telemetryAssignments(telemetry)) WHERE id = \(bind: id)").run()
            }
            for (key, count) in usage {
                try await db.raw("""
                    INSERT INTO usage_daily (tenant_id, product_id, day, activations, validations)
                    VALUES (\(bind: key.tenantId), \(bind: key.productId), \(bind: key.day), \(bind: count.activations), \(bind: count.validations))
                    ON CONFLICT (tenant_id, product_id, day) DO UPDATE SET
                        activations = usage_daily.activations + excluded.activations,
                        validations = usage_daily.validations + excluded.validations
                    """).run()
            }
        }
    }

    /// Deletes keyless installs that never bought a license and were last seen before `cutoff`
    /// (abandoned trials, and ids made up by whoever holds the public SDK key); answers how many.
    func pruneKeyless(seenBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                DELETE FROM keyless_installs WHERE last_seen_at < \(bind: cutoff) AND converted_license_id IS NULL RETURNING instance_id
                """).all().count
        }
    }
}
