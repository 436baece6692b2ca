import SQLKit

extension Database {
    /// Records validation times and adds usage counts, many at once, in one transaction (the
    /// write-behind flush).
    func touchInstances(
        _ times: [String: Int64], usage: [UsageDay: UsageCount] = [:], keyless: [KeylessInstall: KeylessSighting] = [:],
        devices: [InstanceDay: DeviceSighting] = [:], instanceTelemetry: [String: Telemetry] = [:]
    ) async throws {
        try await touchInstances(
            ordered: times.sorted { $0.key < $1.key }[...], usage: usage, keyless: keyless, devices: devices, instanceTelemetry: instanceTelemetry
        )
    }

    /// ``touchInstances(_:usage:keyless:devices:instanceTelemetry:)`` with the times already in id order.
    func touchInstances(
        ordered times: ArraySlice<(key: String, value: Int64)>, usage: [UsageDay: UsageCount] = [:], keyless: [KeylessInstall: KeylessSighting] = [:],
        devices: [InstanceDay: DeviceSighting] = [:], instanceTelemetry: [String: Telemetry] = [:]
    ) async throws {
        guard !times.isEmpty || !usage.isEmpty || !keyless.isEmpty || !devices.isEmpty || !instanceTelemetry.isEmpty else { return }
        let lock = capabilities.rowLockClause
        try await write { db in
            for (install, sighting) in keyless {
                try await Self.storeKeyless(db, install, sighting, lock: lock)
            }
            try await Self.recordValidationTimes(db, times)
            try await Self.recordDeviceDays(db, devices.map { (kind: DeviceKind.licensed, deviceId: $0.key.instanceId, sighting: $0.value) })
            try await Self.recordInstanceTelemetry(db, instanceTelemetry)
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

    /// Validation times in statements of up to ``validationTimesPerStatement`` instances each: one
    /// statement per instance cost each validate of a busy server several microseconds (on
    /// SQLite a trip to sqlite-nio's threads and back per statement, on PostgreSQL a round trip).
    /// `ordered` is in id order, so that processes flushing overlapping instances lock them in the
    /// same order (and a gathered flush walks `instances` page after page). A time never moves an
    /// instance's back.
    static func recordValidationTimes(_ db: any SQLDatabase, _ ordered: ArraySlice<(key: String, value: Int64)>) async throws {
        for start in stride(from: ordered.startIndex, to: ordered.endIndex, by: validationTimesPerStatement) {
            let rows = ordered[start..<min(start + validationTimesPerStatement, ordered.endIndex)]
                .map { "(\(bind: $0.key), \(bind: $0.value))" as SQLQueryString }
                .joined(separator: ", ")
            try await db.raw("""
                WITH seen (instance_id, seen_at) AS (VALUES \(rows))
                UPDATE instances SET last_validated_at = seen.seen_at FROM seen
                WHERE instances.id = seen.instance_id AND (instances.last_validated_at IS NULL OR instances.last_validated_at < seen.seen_at)
                """).run()
        }
    }

    /// Two binds each: well under SQLite's and PostgreSQL's limits on binds per statement.
    static let validationTimesPerStatement = 200

    /// What instances sent that differs from what their rows hold (every device after a restart,
    /// every device that updated the app), ``validationTimesPerStatement`` instances a statement
    /// as for the times. Each row gets every telemetry column, NULL where not sent.
    static func recordInstanceTelemetry(_ db: any SQLDatabase, _ telemetry: [String: Telemetry]) async throws {
        let ordered = telemetry.sorted { $0.key < $1.key }
        let assignments: SQLQueryString = InsightDimension.allCases
            .map { "\(ident: $0.column) = sent.\(ident: $0.column)" as SQLQueryString }
            .joined(separator: ", ")
        for start in stride(from: 0, to: ordered.count, by: validationTimesPerStatement) {
            let rows = ordered[start..<min(start + validationTimesPerStatement, ordered.count)]
                .map { "(\(bind: $0.key), \(telemetryBinds($0.value)))" as SQLQueryString }
                .joined(separator: ", ")
            try await db.raw("""
                WITH sent (instance_id, \(telemetryColumns)) AS (VALUES \(rows))
                UPDATE instances SET \(assignments) FROM sent WHERE instances.id = sent.instance_id
                """).run()
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
