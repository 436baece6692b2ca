/// A member's role in a tenant (or in every tenant): a named set of permissions.
public enum Role: String, CaseIterable, Sendable, Codable {
    /// Everything, users included.
    case owner
    /// Everything but users and the server-wide key rotation.
    case admin
    /// Products, key types, releases, webhooks and insights; no payment secrets.
    case developer
    /// Reads licenses, frees seats, mails a key again to the address on file; no remint, no secrets.
    case support
    case readOnly = "read_only"

    public var permissions: Set<Permission> {
        switch self {
        case .owner:
            return Set(Permission.allCases)
        case .admin:
            return Set(Permission.allCases).subtracting([.usersManage, .signingKeysRotateAll])
        case .developer:
            return [.tenantsRead, .productsRead, .productsWrite, .licensesRead, .insightsRead, .signingKeysRead,
                    .webhooksRead, .webhooksWrite, .releasesPublish, .mailSettingsRead]
        case .support:
            return [.tenantsRead, .productsRead, .licensesRead, .seatsFree, .licensesMail]
        case .readOnly:
            return [.tenantsRead, .productsRead, .licensesRead, .insightsRead, .auditRead, .signingKeysRead,
                    .webhooksRead, .paymentsRead, .mailSettingsRead]
        }
    }

    /// How the dashboard names it.
    var title: String {
        switch self {
        case .owner: "Owner"
        case .admin: "Admin"
        case .developer: "Developer"
        case .support: "Support"
        case .readOnly: "Read only"
        }
    }

    static func parse(_ text: String) throws(APIError) -> Role {
        guard let role = Role(rawValue: text) else {
            throw .invalidRequest("Unknown role \(String(text.prefix(64))); the roles are \(allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        return role
    }
}
