import SQLKit

/// A bulk job as stored: what it selected and changes, and how far it has come.
struct BulkJobRow: Sendable {
    var id: String
    var tenantId: String
    var productId: String
    var change: String
    var actor: String
    var state: String
    var total: Int
    var createdAt: Int64
    /// Items through the change, by outcome (`updated`, `unchanged`, `gone`, or a refusal's code).
    var outcomes: [String: Int] = [:]

    var done: Int { outcomes.values.reduce(0, +) }
}

extension Database {
    /// The licenses of a product a bulk filter selects, as a condition on `licenses`.
    private static func bulkCondition(_ filter: BulkFilter, tenantId: String, productId: String) -> SQLQueryString {
        var condition: SQLQueryString = "tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)"
        if let keyTypeId = filter.keyTypeId { condition += " AND key_type_id = \(bind: keyTypeId)" }
        if let status = filter.status { condition += " AND status = \(bind: status.rawValue)" }
        if let before = filter.createdBefore { condition += " AND created_at < \(bind: before)" }
        if let after = filter.createdAfter { condition += " AND created_at >= \(bind: after)" }
        condition += metadataCondition(filter.metadata, tenantId: tenantId, productId: productId)
        return condition
    }

    /// How many licenses `filter` selects, and the first `sample` ids (in id order).
    func bulkSelection(tenantId: String, productId: String, filter: BulkFilter, sample: Int) async throws -> (count: Int, ids: [String]) {
        let condition = Self.bulkCondition(filter, tenantId: tenantId, productId: productId)
        let count = try await sql.raw("SELECT COUNT(*) AS n FROM licenses WHERE \(condition)").first(decodingColumn: "n", as: Int.self) ?? 0
        let ids = try await sql.raw("SELECT id FROM licenses WHERE \(condition) ORDER BY id LIMIT \(literal: sample)").all(decodingColumn: "id", as: String.self)
        return (count, ids)
    }

    /// Creates a job and lists every license its filter selects now, in one transaction: the job
    /// changes exactly those (a license minted later is not among them). Audited once as
    /// `license.bulk`; each license it changes gets its own entry as it is changed.
    func createBulkJob(
        id: String, tenantId: String, productId: String, filter: BulkFilter, filterJSON: String, changeJSON: String, now: Int64, actor: AuditActor
    ) async throws -> Int {
        let condition = Self.bulkCondition(filter, tenantId: tenantId, productId: productId)
        return try await write { db in
            try await db.raw("""
                INSERT INTO bulk_jobs (id, tenant_id, product_id, filter, change, actor, state, total, done, created_at, updated_at)
                VALUES (\(bind: id), \(bind: tenantId), \(bind: productId), \(bind: filterJSON), \(bind: changeJSON), \(bind: actor.name), 'running', 0, 0, \(bind: now), \(bind: now))
                """).run()
            try await db.raw("INSERT INTO bulk_job_items (job_id, license_id) SELECT \(bind: id), id FROM licenses WHERE \(condition)").run()
            let total = try await db.raw("SELECT COUNT(*) AS n FROM bulk_job_items WHERE job_id = \(bind: id)").first(decodingColumn: "n", as: Int.self) ?? 0
            try await db.raw("UPDATE bulk_jobs SET total = \(bind: total) WHERE id = \(bind: id)").run()
            try await Self.record(ChangeLog(tenantId: tenantId, now: now).bulkJobStarted(productId: productId, actor: actor, details: [
                "job_id": id, "filter": filterJSON, "change": changeJSON, "total": "\(total)",
            ]), on: db, outbox: nil)
            return total
        }
    }

    private static let bulkJobColumns: SQLQueryString = "id, tenant_id, product_id, change, actor, state, total, created_at"

    private static func bulkJob(_ row: any SQLRow) throws -> BulkJobRow {
        BulkJobRow(
            id: try row.decode(column: "id", as: String.self), tenantId: try row.decode(column: "tenant_id", as: String.self),
            productId: try row.decode(column: "product_id", as: String.self), change: try row.decode(column: "change", as: String.self),
            actor: try row.decode(column: "actor", as: String.self), state: try row.decode(column: "state", as: String.self),
            total: try row.decode(column: "total", as: Int.self), createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
    }

    /// One job of a product, with its items counted by outcome.
    func bulkJob(tenantId: String, productId: String, id: String) async throws -> BulkJobRow? {
        guard let row = try await sql.raw("""
            SELECT \(Self.bulkJobColumns) FROM bulk_jobs WHERE id = \(bind: id) AND tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            """).first() else { return nil }
        var job = try Self.bulkJob(row)
        for row in try await sql.raw("""
            SELECT outcome, COUNT(*) AS n FROM bulk_job_items WHERE job_id = \(bind: id) AND applied_at IS NOT NULL GROUP BY outcome
            """).all() {
            let outcome = try row.decodeNil(column: "outcome") ? "gone" : try row.decode(column: "outcome", as: String.self)
            job.outcomes[outcome, default: 0] += try row.decode(column: "n", as: Int.self)
        }
        return job
    }

    /// Jobs still running, oldest first.
    func runningBulkJobs() async throws -> [BulkJobRow] {
        try await sql.raw("SELECT \(Self.bulkJobColumns) FROM bulk_jobs WHERE state = 'running' ORDER BY created_at, id").all().map(Self.bulkJob)
    }

    /// Licenses of a job not yet through its change, in id order.
    func pendingBulkItems(jobId: String, limit: Int) async throws -> [String] {
        try await sql.raw("""
            SELECT license_id FROM bulk_job_items WHERE job_id = \(bind: jobId) AND applied_at IS NULL ORDER BY license_id LIMIT \(literal: limit)
            """).all(decodingColumn: "license_id", as: String.self)
    }

    /// Stops a job that cannot run (`failed`); the licenses it changed stay changed.
    func failBulkJob(jobId: String, now: Int64) async throws {
        try await sql.raw("UPDATE bulk_jobs SET state = 'failed', updated_at = \(bind: now) WHERE id = \(bind: jobId) AND state = 'running'").run()
    }

    /// Records how far a job has come; `done` once no item is left (by any process).
    func recordBulkProgress(jobId: String, now: Int64) async throws {
        try await write { db in
            let done = try await db.raw("SELECT COUNT(*) AS n FROM bulk_job_items WHERE job_id = \(bind: jobId) AND applied_at IS NOT NULL")
                .first(decodingColumn: "n", as: Int.self) ?? 0
            let left = try await db.raw("SELECT COUNT(*) AS n FROM bulk_job_items WHERE job_id = \(bind: jobId) AND applied_at IS NULL")
                .first(decodingColumn: "n", as: Int.self) ?? 0
            try await db.raw("""
                UPDATE bulk_jobs SET done = \(bind: done), state = \(bind: left == 0 ? "done" : "running"), updated_at = \(bind: now) WHERE id = \(bind: jobId)
                """).run()
        }
    }
}
