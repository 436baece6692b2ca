import Foundation
import KeylightSigning

/// Signing keys (protocol 6.2): preparing, rotating and retiring each tenant's keys.
extension AdminService {
    /// Publishes a `next` key for the tenant, to ship in the app before it signs anything; a
    /// second call returns the key already prepared.
    func prepareSigningKey(tenantId: String, actor: AuditActor) async throws -> SigningKeyRow {
        _ = try await requireTenant(tenantId)
        return try await keyRing.prepare(tenantId: tenantId, actor: actor)
    }

    /// Rotates one tenant (or every tenant, `tenantId` nil): its prepared `next` key, else a new
    /// key of its own, signs from now on; responses are signed under it at once (a new intermediate
    /// key). At least one outcome, in tenant id order; 409 when there is no tenant to rotate.
    /// With `expected_next_kid`, the rotation happens only if that is the key staged (prepared)
    /// for each tenant rotated; else 409 `STAGED_KEY_MISMATCH` and nothing changes. A retried
    /// rotation so cannot promote a second key.
    func rotateSigningKeys(tenantId: String?, _ body: RotateSigningKeysRequest? = nil, actor: AuditActor) async throws -> [RotationOutcome] {
        let tenantIds = if let tenantId { [try await requireTenant(tenantId).id] } else { try await database.tenants().map(\.id) }
        guard !tenantIds.isEmpty else { throw APIError.conflict("There is no tenant to rotate; each tenant gets its first key when it is created.") }
        let expected = try Field.optional(body?.expected_next_kid, "expected_next_kid", max: 64)
        let outcomes: [RotationOutcome]
        do {
            outcomes = try await keyRing.rotate(tenantIds: tenantIds, expectedNextKid: expected, actor: actor)
        } catch let mismatch as StagedKeyMismatch {
            var error = APIError(
                status: .conflict, code: "STAGED_KEY_MISMATCH",
                message: "Tenant \(mismatch.tenantId)'s staged key is \(mismatch.stagedKid ?? "none"), not \(expected ?? ""): nothing was rotated. Read the keys again before rotating."
            )
            error.extraFields = Array((try? JSONSerialization.data(withJSONObject: ["staged_kid": mismatch.stagedKid.map { $0 as Any } ?? NSNull()])) ?? Data())
            throw error
        }
        try await signer.refresh()
        return outcomes
    }

    /// Retires `kid` for one tenant, or for every tenant that has it (`tenantId` nil).
    func retireSigningKey(kid: String, tenantId: String?, actor: AuditActor) async throws {
        if let tenantId { _ = try await requireTenant(tenantId) }
        guard SigningKey.isValidKid(kid) else { throw APIError.notFound("Signing key") }
        switch try await keyRing.retire(kid: kid, tenantId: tenantId, actor: actor) {
        case .retired, .alreadyRetired: return
        case .notFound: throw APIError.notFound("Signing key")
        case .active: throw APIError.conflict("The signing key that signs now cannot be retired; rotate first.")
        }
    }
}
