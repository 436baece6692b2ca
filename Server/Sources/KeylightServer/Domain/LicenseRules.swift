import KeylightCore
import KeylightSigning

/// The rules every door applies to a license as read: whether it may be used, and the lease it
/// earns. The SDK API, offline files, the App Store exchange and the portal all decide with these,
/// and storage runs them inside the activation's transaction, on the row it has locked.
enum LicenseRules {
    /// Why a license may not be used, or nil. Revoked and suspended always refuse; an expired
    /// license refuses activation only when its key type has no fallback access (validation
    /// answers it with an `expired` lease instead).
    static func refusal(_ grant: LicenseGrant, now: Int64, activating: Bool, offline: Bool = false) -> APIError? {
        switch grant.status {
        case .revoked: return .licenseRevoked
        case .suspended: return .licenseSuspended
        case .active where offline && grant.floating:
            // A floating seat is held by validating; a device that never calls cannot hold one.
            return .offlineNotAllowed
        case .active:
            let expired = grant.isExpired(at: now)
            return activating && expired && !grant.fallbackAccess ? .licenseExpired : nil
        }
    }

    /// Whether the key alone may free `instance`: not for one activated offline. That device holds
    /// a lease of up to `offline_lease_days` and never asks the server again, so freeing its seat
    /// without its proof (which it makes only after forgetting the license) would let one seat
    /// license any number of offline machines. The developer can still free it (admin, dashboard).
    static let onlineOnly: @Sendable (Instance) -> Bool = { !$0.isOffline }

    /// The lease rules: `active` until `min(now + ttl, license expiry)` with the key type's
    /// entitlements; after expiry `fallback` (with fallback access) or `expired`, for `ttl`,
    /// without entitlements.
    static func lease(for grant: LicenseGrant, instanceId: String, now: Int64, ttl: Int64, key: SigningKey) throws -> Lease {
        let expired = grant.isExpired(at: now)
        let ttlEnd = now + ttl
        let status: Lease.Status = !expired ? .active : (grant.fallbackAccess ? .fallback : .expired)
        let expiresAt = status == .active ? min(ttlEnd, grant.expiresAt ?? .max) : ttlEnd
        return try Lease.sign(
            licenseKeyHash: grant.keyHash, instanceId: instanceId, issuedAt: now, expiresAt: expiresAt,
            status: status, entitlements: status == .active ? grant.entitlementCodes : [], with: key
        )
    }

    /// How long a validation's lease lasts: a device activated offline keeps leases as long as its
    /// offline one when it does get online (a week-long lease would end its offline life a week later).
    static func validationLeaseTTL(_ grant: LicenseGrant) -> Int64 {
        grant.instanceDeviceKey == nil ? grant.onlineLeaseTTL : Int64(grant.offlineLeaseDays) * 86_400
    }
}
