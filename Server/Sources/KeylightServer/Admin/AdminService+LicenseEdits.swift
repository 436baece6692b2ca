import Foundation

/// License edits (issue 49): `PATCH …/licenses/{id}`, `renew`, and the admin answers that show a
/// license with its effective limit and entitlements.
extension AdminService {
    /// The admin API's view of `licenses`: each with its key type (effective limit and
    /// entitlements) and metadata, read in two queries for the page.
    func licenseBodies(_ licenses: [License], tenantId: String, productId: String) async throws -> [LicenseBody] {
        let keyTypes = LicenseEdit.KeyTypes(try await database.keyTypes(tenantId: tenantId, productId: productId))
        let metadata = try await database.metadata(licenseIds: licenses.map(\.id))
        let now = clock.unixSeconds
        return licenses.map { LicenseBody(license: $0, now: now, keyType: keyTypes[$0.keyTypeId], metadata: metadata[$0.id]) }
    }

    func licenseBody(_ license: License, licenseKey: String? = nil, instances: [Instance]? = nil) async throws -> LicenseBody {
        var body = try await licenseBodies([license], tenantId: license.tenantId, productId: license.productId)[0]
        body.licenseKey = licenseKey
        body.instances = instances
        return body
    }

    /// Applies `edit` to one license of the product; 404 without it, 422 when the edit does not
    /// fit this license (a key type of another product, a renewal with no date to extend).
    func editLicense(tenantId: String, productId: String, id: String, _ edit: LicenseEdit, actor: AuditActor) async throws -> License {
        _ = try await requireProduct(tenantId: tenantId, productId: productId)
        let keyTypes = try await database.keyTypes(tenantId: tenantId, productId: productId)
        if let wanted = edit.keyTypeId, !keyTypes.contains(where: { $0.id == wanted }) {
            // Moving a license across products is out of scope: its key, prefix and apps belong to this one.
            var elsewhere = false
            for product in try await database.products(tenantId: tenantId) where product.id != productId {
                if try await database.keyType(tenantId: tenantId, productId: product.id, id: wanted) != nil { elsewhere = true }
            }
            throw APIError(
                status: .unprocessableContent, code: elsewhere ? "KEY_TYPE_OF_OTHER_PRODUCT" : "UNKNOWN_KEY_TYPE",
                message: elsewhere
                    ? "Key type \(wanted) belongs to another product; a license moves only between key types of its own product."
                    : "Product \(productId) has no key type \(wanted)."
            )
        }
        switch try await database.editLicense(
            tenantId: tenantId, productId: productId, id: id, edit: edit, keyTypes: LicenseEdit.KeyTypes(keyTypes), now: clock.unixSeconds, actor: actor
        ) {
        case .notFound, .alreadyApplied: throw APIError.notFound("License")
        case .refused(let refusal): throw APIError(status: .unprocessableContent, code: refusal.code, message: refusal.message)
        case .edited(let outcome): return outcome.license
        }
    }
}

extension AdminService {
    /// One license's metadata (empty when it has none).
    func licenseMetadata(_ licenseId: String) async throws -> [String: MetadataValue] {
        try await database.metadata(licenseIds: [licenseId])[licenseId] ?? [:]
    }
}

extension AdminService {
    /// Bulk license changes (`POST …/licenses/bulk`), run by the server's bulk-job service.
    var bulkJobs: BulkJobs { BulkJobs(database: database, clock: clock) }
}
