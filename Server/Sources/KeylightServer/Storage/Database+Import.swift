import SQLKit

extension Database {
    /// Inserts many licenses at once (migration from another system, load tests), in batches of
    /// `batchSize` rows per statement and one transaction per batch. Audited as one entry per call.
    /// With `tidy`, refreshes planner statistics and compacts the log afterwards (do it once, after the last call).
    public func importLicenses(_ licenses: [License], actor: AuditActor = .system, batchSize: Int = 500, tidy: Bool = false) async throws {
        guard let first = licenses.first else { return }
        // Licenses are stored in key-hash order; inserting in that order keeps page splits local.
        let licenses = licenses.sorted { $0.keyHash < $1.keyHash }
        var start = 0
        while start < licenses.count {
            let batch = Array(licenses[start..<min(start + batchSize, licenses.count)])
            try await write { db in
                var query: SQLQueryString = "INSERT INTO licenses (\(Self.licenseColumns)) VALUES "
                for (index, license) in batch.enumerated() {
                    if index > 0 { query += ", " }
                    query += "(\(Self.licenseValues(license)))"
                }
                try await db.raw(query).run()
            }
            start += batchSize
        }
        try await write { db in
            try await Self.record(
                ChangeLog(tenantId: first.tenantId, now: first.createdAt).licensesImported(productId: first.productId, count: licenses.count, actor: actor), on: db, outbox: nil
            )
        }
        if tidy { try await tidyAfterBulkWrite() }
    }
}
