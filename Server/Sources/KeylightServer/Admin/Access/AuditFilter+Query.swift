extension AuditFilter {
    /// The audit log's filters from a query (`tenant`, `actor`, `actor_kind`, `actor_id`,
    /// `action`), over the tenants the principal may read the log of.
    init(principal: Principal, reading value: (String) -> String?) throws(APIError) {
        func text(_ name: String, max: Int = 200) throws(APIError) -> String? {
            guard let raw = value(name), !raw.isEmpty else { return nil }
            guard raw.utf8.count <= max else { throw .invalidRequest("\(name) is over \(max) bytes.") }
            return String(raw)
        }
        self.init(tenants: principal.tenants(with: .auditRead))
        tenantId = try text("tenant", max: 64)
        actor = try text("actor", max: 300)
        actorId = try text("actor_id", max: 100)
        action = try text("action", max: 100)
        if let kind = try text("actor_kind", max: 20) {
            guard let parsed = AuditActor.Kind(rawValue: kind) else {
                throw .invalidRequest("actor_kind is one of \(AuditActor.Kind.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            actorKind = parsed
        }
    }
}
