import Foundation

/// Why a lease could not be signed or read.
public struct LeaseError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String

    public static let ambiguousField = Self(description: "lease fields must not contain '|', and entitlements must be non-empty and contain no ','")
    public static let expiresBeforeIssued = Self(description: "lease expiresAt is before issuedAt")
    public static let entitlementsWithoutActive = Self(description: "only active leases carry entitlements")
    public static let malformed = Self(description: "not a lease: expected {kid, licenseKeyHash, instanceId, issuedAt, expiresAt, status, signature, entitlements}")
}
