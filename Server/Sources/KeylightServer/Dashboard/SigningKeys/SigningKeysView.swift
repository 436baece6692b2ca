import KeylightCore
import KeylightSigning

/// `signing_keys.mustache`.
struct SigningKeysView: Sendable {
    var chrome: Chrome
    var tenants: [TenantSigningKeys]
    /// Owners of every tenant only.
    var canRotateAll: Bool
}

/// One tenant's keys on the signing-keys page, with what its next app build must trust.
struct TenantSigningKeys: Sendable {
    var id: String
    var name: String
    var keys: [SigningKeyListRow]
    /// The prepared key, if any (rotation promotes it).
    var next: String?
    var trustedKeys: String
    var canRotate: Bool

    init(id: String, name: String, keys: KeyRing.TenantKeys?, canRotate: Bool) {
        self.canRotate = canRotate
        self.id = id
        self.name = name
        self.keys = (keys?.rows ?? []).reversed().map(SigningKeyListRow.init)
        next = keys?.next?.kid
        trustedKeys = AppSnippet.publicKeysPlist(keys)
    }
}

struct SigningKeyListRow: Sendable {
    var kid: String
    var publicKey: String
    var status: String
    var created: String
    var canRetire: Bool

    init(_ row: (kid: String, publicKey: String, status: SigningKeyStatus, createdAt: Int64)) {
        kid = row.kid
        publicKey = row.publicKey
        status = row.status.rawValue
        created = DashboardFormat.time(row.createdAt)
        canRetire = row.status == .grace || row.status == .next
    }
}
