import Foundation
import KeylightCore

/// Who asks for updates: a device proving its license with its lease (`X-Keylight-Lease`), or
/// anyone, where the product's feed is public (protocol 6.9).
enum UpdateViewer: Sendable {
    /// A licensed device, and the release date up to which its license's updates reach (nil: every build).
    case licensed(coveredUntil: Int64?, instanceId: String)
    case publicFeed

    /// The update window; without one, a subscription covers what was released while it ran.
    static func coveredUntil(updatesUntil: Int64?, expiresAt: Int64?) -> Int64? { updatesUntil ?? expiresAt }

    /// Builds released up to this date are covered; nil: every build.
    var coveredUntil: Int64? {
        switch self {
        case .publicFeed: nil
        case .licensed(let coveredUntil, _): coveredUntil
        }
    }

    func covers(_ release: Release) -> Bool {
        coveredUntil.map { release.releasedAt <= $0 } ?? true
    }

    var instanceId: String {
        switch self {
        case .licensed(_, let instanceId): instanceId
        case .publicFeed: DownloadToken.anonymous
        }
    }
}

extension APIError {
    static let leaseRequired = APIError(
        status: .unauthorized, code: "LEASE_REQUIRED",
        message: "Updates of this product need the device's lease in X-Keylight-Lease (base64url of the lease's JSON)."
    )
    static func invalidLease(_ reason: String) -> APIError {
        APIError(status: .unauthorized, code: "INVALID_LEASE", message: "The lease in X-Keylight-Lease is refused: \(reason).")
    }
}

extension Lease {
    /// `now > expiresAt + skew`, as ``verify(with:now:skew:)`` decides it (an end so far off that
    /// adding the skew overflows never comes).
    static func hasEnded(expiresAt: Int64, now: Int64) -> Bool {
        let (limit, overflow) = expiresAt.addingReportingOverflow(Lease.expirySkew)
        return !overflow && now > limit
    }
}

extension ReleaseService {
    static let leaseHeaderLimit = 4_096

    /// The lease in `header`, its signature checked against the tenant's keys. A device sends the
    /// same lease on every check and download until it renews it, so a signature once verified is
    /// remembered (by the header's exact text, with its kid): only the kid's presence in the
    /// keyset is checked again, which a retired key fails.
    func verifiedLease(_ header: String, tenantId: String) async throws -> Lease {
        guard let keys = try await keyRing.keys(for: tenantId) else { throw APIError.notFound("Product") }
        if let known = verifiedLeases.withLockedValue({ $0[tenantId + "\u{0}" + header] }), keys.keyset[known.kid] != nil { return known }
        guard header.utf8.count <= Self.leaseHeaderLimit, let json = Base64URL.decode(Substring(header)), let lease = try? Lease(json: Data(json)) else {
            throw APIError.invalidLease("it is not base64url of a lease's JSON")
        }
        guard lease.verify(with: keys.keyset, now: clock.unixSeconds).isTrusted else { throw APIError.invalidLease("it is not signed by this tenant's keys") }
        verifiedLeases.withLockedValue { cache in
            // Bounded: only leases that verified get here, and the whole set is dropped when full.
            if cache.count >= Self.verifiedLeaseLimit { cache.removeAll(keepingCapacity: true) }
            cache[tenantId + "\u{0}" + header] = lease
        }
        return lease
    }

    /// The viewer a request's lease header makes, or the public feed, or a refusal. A lease that
    /// is sent is checked even where the feed is public: a tampered or foreign lease is refused,
    /// never quietly treated as no lease.
    func viewer(tenantId: String, productId: String, leaseHeader: String?, settings: ProductUpdateSettings) async throws -> UpdateViewer {
        guard let header = leaseHeader else {
            guard settings.publicFeed else { throw APIError.leaseRequired }
            return .publicFeed
        }
        let lease = try await verifiedLease(header, tenantId: tenantId)
        guard !Lease.hasEnded(expiresAt: lease.expiresAt, now: clock.unixSeconds) else {
            throw APIError.invalidLease("it has expired; validate the license for a new one")
        }
        guard let holder = try await database.leaseHolder(keyHash: lease.licenseKeyHash, instanceId: lease.instanceId),
              holder.tenantId == tenantId, holder.productId == productId else {
            throw APIError.invalidLease("it is not a lease of this product")
        }
        switch holder.status {
        case .revoked: throw APIError.licenseRevoked
        case .suspended: throw APIError.licenseSuspended
        case .active: break
        }
        guard let instanceActive = holder.instanceActive else { throw APIError.invalidLease("its device is not one of the license's") }
        guard instanceActive else { throw APIError.instanceInactive }
        return .licensed(coveredUntil: UpdateViewer.coveredUntil(updatesUntil: holder.updatesUntil, expiresAt: holder.expiresAt), instanceId: lease.instanceId)
    }
}
