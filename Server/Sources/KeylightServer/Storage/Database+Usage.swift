import SQLKit

/// How many of a product's licenses are in each state, for the dashboard.
public struct LicenseStatusCounts: Sendable, Equatable {
    public var active = 0
    /// Active but past their expiry.
    public var expired = 0
    public var suspended = 0
    public var revoked = 0
    public var total: Int { active + expired + suspended + revoked }
}

extension Database {
    /// Usage per day for the `days` days ending with `lastDay` (days since 1970, UTC), zeros included.
    func usage(tenantId: String, productId: String, lastDay: Int64, days: Int) async throws -> [(day: Int64, count: UsageCount)] {
        let first = lastDay - Int64(days) + 1
        let rows = try await sql.raw("""
            SELECT day, activations, validations FROM usage_daily
            WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId) AND day >= \(bind: first) AND day <= \(bind: lastDay)
            """).all()
        var counts: [Int64: UsageCount] = [:]
        for row in rows {
            counts[try row.decode(column: "day", as: Int64.self)] = UsageCount(
                activations: try row.decode(column: "activations", as: Int.self), validations: try row.decode(column: "validations", as: Int.self)
            )
        }
        return (first...lastDay).map { ($0, counts[$0] ?? UsageCount()) }
    }

    public func licenseStatusCounts(tenantId: String, productId: String, now: Int64) async throws -> LicenseStatusCounts {
        let rows = try await sql.raw("""
            SELECT CASE WHEN status = 'active' AND expires_at IS NOT NULL AND expires_at <= \(bind: now) THEN 'expired' ELSE status END AS state,
                   COUNT(*) AS n
            FROM licenses WHERE tenant_id = \(bind: tenantId) AND product_id = \(bind: productId)
            GROUP BY 1
            """).all()
        var counts = LicenseStatusCounts()
        for row in rows {
            let n = try row.decode(column: "n", as: Int.self)
            switch try row.decode(column: "state", as: String.self) {
            case "active": counts.active = n
            case "expired": counts.expired = n
            case "suspended": counts.suspended = n
            case "revoked": counts.revoked = n
            default: break
            }
        }
        return counts
    }
}
