/// What a user or token may do, named by resource and action. Every admin route and dashboard
/// action names one where it is registered (``AdminRouter``, ``SignedInRoutes``), and
/// ``AdminService/authorize(_:_:tenantId:productId:)`` checks it, for both.
public enum Permission: String, CaseIterable, Sendable, Codable, Comparable {
    case tenantsRead = "tenants:read"
    /// Creating a tenant acts on the server, not on one tenant: it needs every tenant.
    case tenantsCreate = "tenants:create"
    case productsRead = "products:read"
    /// Products, key types, offers, the portal's and the App Store's settings.
    case productsWrite = "products:write"
    case licensesRead = "licenses:read"
    /// Create, edit, renew, bulk changes, revoke, suspend, reinstate; mailing a key to another address.
    case licensesWrite = "licenses:write"
    /// A new key for a license (the old one stops working; the new one is shown).
    case licensesRemint = "licenses:remint"
    /// Mail a license's key again, to the address on file.
    case licensesMail = "licenses:mail"
    case seatsFree = "seats:free"
    case insightsRead = "insights:read"
    case auditRead = "audit:read"
    case signingKeysRead = "signing_keys:read"
    /// Prepare, rotate and retire one tenant's keys.
    case signingKeysRotate = "signing_keys:rotate"
    /// Rotate or retire for every tenant at once (cannot be undone): owners of every tenant only.
    case signingKeysRotateAll = "signing_keys:rotate_all"
    case webhooksRead = "webhooks:read"
    case webhooksWrite = "webhooks:write"
    case paymentsRead = "payments:read"
    /// Payment providers' secrets, the checkout key, retrying payment events.
    case paymentsWrite = "payments:write"
    case mailSettingsRead = "mail_settings:read"
    /// The license mail's and the reminders' templates.
    case mailSettingsWrite = "mail_settings:write"
    /// Create, upload, publish and yank releases.
    case releasesPublish = "releases:publish"
    case tokensManage = "tokens:manage"
    case usersManage = "users:manage"

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Acts on the server rather than on one tenant: only a grant over every tenant holds it.
    var isServerWide: Bool { self == .tenantsCreate || self == .signingKeysRotateAll }

    /// Actions a stolen session must not reach: the dashboard asks for the password (and the
    /// second factor) again when the last sign-in is more than ten minutes old.
    var needsRecentSignIn: Bool {
        switch self {
        case .signingKeysRotate, .signingKeysRotateAll, .webhooksWrite, .paymentsWrite, .mailSettingsWrite,
             .tokensManage, .usersManage, .licensesRemint, .tenantsCreate:
            return true
        default:
            return false
        }
    }

    /// Parses a list as sent (`["licenses:read", …]`); an unknown name is 400.
    static func parse(_ names: [String]) throws(APIError) -> Set<Permission> {
        var permissions = Set<Permission>()
        for name in names {
            guard let permission = Permission(rawValue: name) else {
                throw .invalidRequest("Unknown permission \(String(name.prefix(64))); the permissions are \(allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            permissions.insert(permission)
        }
        return permissions
    }
}
