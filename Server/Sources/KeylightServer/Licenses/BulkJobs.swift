import Foundation
import KeylightCore
import Logging

/// Bulk license changes (`POST …/licenses/bulk`): a dry run counts what a filter selects; a real
/// run becomes a job that ``runPending(batch:maxItems:)`` works through, one license per
/// transaction, each marked done in the transaction that changes it. A process that dies half-way
/// leaves the rest for the next run (its own after a restart, or another process's); no license is
/// changed twice, and each change is audited on its own.
struct BulkJobs: Sendable {
    let database: Database
    let clock: any WallClock
    var logger = Logger(label: "keylight.bulk")

    /// How many ids a dry run shows.
    static let sampleSize = 20

    enum Created {
        case dryRun(BulkDryRunBody)
        case job(BulkJobBody)
    }

    func create(tenantId: String, productId: String, _ request: BulkLicenseRequest, actor: AuditActor, admin: AdminService) async throws -> Created {
        _ = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        guard let filterRequest = request.filter else { throw APIError.invalidRequest("Missing field filter ({} selects every license of the product).") }
        guard let changeRequest = request.change else { throw APIError.invalidRequest("Missing field change.") }
        let filter = try filterRequest.checked()
        let edit = try changeRequest.edit()
        if let wanted = edit.keyTypeId, try await admin.keyType(tenantId: tenantId, productId: productId, id: wanted) == nil {
            throw APIError(status: .unprocessableContent, code: "UNKNOWN_KEY_TYPE", message: "Product \(productId) has no key type \(wanted).")
        }
        if request.dry_run == true {
            let (count, ids) = try await database.bulkSelection(tenantId: tenantId, productId: productId, filter: filter, sample: Self.sampleSize)
            return .dryRun(BulkDryRunBody(count: count, ids: ids))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let id = "bulk_" + RandomUUID.compactLowercaseString()
        let now = clock.unixSeconds
        let total = try await database.createBulkJob(
            id: id, tenantId: tenantId, productId: productId, filter: filter,
            filterJSON: String(decoding: try encoder.encode(filterRequest), as: UTF8.self),
            changeJSON: String(decoding: try encoder.encode(changeRequest), as: UTF8.self), now: now, actor: actor
        )
        if total == 0 { try await database.recordBulkProgress(jobId: id, now: now) }
        return .job(BulkJobBody(id: id, state: total == 0 ? "done" : "running", total: total, done: 0, updated: 0, unchanged: 0, refused: [:], created_at: now))
    }

    func status(tenantId: String, productId: String, id: String) async throws -> BulkJobBody {
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(productId), id.utf8.count <= 64,
              let job = try await database.bulkJob(tenantId: tenantId, productId: productId, id: id) else { throw APIError.notFound("Bulk job") }
        var refused = job.outcomes
        for kept in ["updated", "unchanged"] { refused[kept] = nil }
        return BulkJobBody(
            id: job.id, state: job.state, total: job.total, done: job.done, updated: job.outcomes["updated"] ?? 0,
            unchanged: job.outcomes["unchanged"] ?? 0, refused: refused, created_at: job.createdAt
        )
    }

    /// Works through every running job, `batch` licenses at a time; at most `maxItems` licenses
    /// in all (tests stop a job half-way with it). Returns how many it changed or passed over.
    @discardableResult
    func runPending(batch: Int = 100, maxItems: Int = .max) async -> Int {
        var processed = 0
        do {
            for job in try await database.runningBulkJobs() {
                guard let changeData = job.change.data(using: .utf8),
                      let edit = try? JSONDecoder().decode(BulkChangeRequest.self, from: changeData).edit() else {
                    // Stopped for good (`failed`), not retried every second.
                    logger.error("bulk job has a change this build cannot read; it is marked failed", metadata: ["job": "\(job.id)"])
                    try await database.failBulkJob(jobId: job.id, now: clock.unixSeconds)
                    continue
                }
                let actor = AuditActor(job.actor)
                while processed < maxItems {
                    let ids = try await database.pendingBulkItems(jobId: job.id, limit: min(batch, maxItems - processed))
                    if ids.isEmpty { break }
                    // Read per batch: a key type added meanwhile is known to the next one.
                    let keyTypes = LicenseEdit.KeyTypes(try await database.keyTypes(tenantId: job.tenantId, productId: job.productId))
                    for id in ids {
                        _ = try await database.editLicense(
                            tenantId: job.tenantId, productId: job.productId, id: id, edit: edit, keyTypes: keyTypes,
                            now: clock.unixSeconds, actor: actor, bulkJob: job.id
                        )
                        processed += 1
                    }
                    try await database.recordBulkProgress(jobId: job.id, now: clock.unixSeconds)
                }
                try await database.recordBulkProgress(jobId: job.id, now: clock.unixSeconds)
                if processed >= maxItems { break }
            }
        } catch {
            // The next tick goes on from the first license not yet marked done.
            logger.warning("bulk job paused", metadata: ["error": "\(error)"])
        }
        return processed
    }
}
