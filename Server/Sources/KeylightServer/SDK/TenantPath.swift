/// Path rules for tenant and product ids.
enum TenantPath {
    /// The server's own first path segments, refused as tenant ids.
    static let reserved: Set<String> = ["admin", "api", "dashboard", "stripe", "healthz", "metrics", ".well-known", "portal"]
    /// Refused for new tenants too: first path segments added later (the merchants' webhooks).
    /// A tenant made before keeps working; only its product named `webhook` is shadowed.
    /// `t` is the hosted clients' upgrade link (`/t/<tenant>/license/<KEY>/upgrade`).
    static let reservedForNewTenants: Set<String> = reserved.union(MerchantProvider.allCases.map(\.rawValue) + ["appstore", "t"])
    /// Refused as product ids: `/portal/<tenant>/account` is the buyer's account.
    static let reservedProductIds: Set<String> = ["account"]

    /// `[a-z0-9][a-z0-9_-]{0,62}`.
    static func isValidId(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...63).contains(bytes.count) else { return false }
        for (index, byte) in bytes.enumerated() {
            let alnum = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            if index == 0 ? !alnum : !(alnum || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")) { return false }
        }
        return true
    }
}
