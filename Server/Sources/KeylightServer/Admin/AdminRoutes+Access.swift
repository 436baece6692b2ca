import Hummingbird

/// Team access (issue 50) and the audit log.
extension AdminRoutes {
    /// Named tokens and the audit log.
    func registerAccess(on admin: AdminRouter) {
        // Team access (issue 50): named tokens, scoped and expiring.
        admin.post("/tokens", .tokensManage, body: CreateTokenRequest.self) { body, _, context in
            let (record, token) = try await service.createToken(body, by: try context.requirePrincipal())
            return try JSONBody.response(TokenBody(record, token: token), status: .created)
        }
        admin.get("/tokens", .tokensManage) { request, context in
            let tenant = request.uri.queryParameters.get("tenant").flatMap { $0.isEmpty ? nil : String($0) }
            return try JSONBody.response(["tokens": try await service.tokens(visibleTo: try context.requirePrincipal(), tenantId: tenant).map { TokenBody($0) }])
        }
        admin.delete("/tokens/:id", .tokensManage) { _, context in
            try await service.revokeToken(id: try context.parameters.require("id"), by: try context.requirePrincipal())
            return Response(status: .noContent)
        }
        admin.get("/audit-log", .auditRead) { request, context in
            let query = request.uri.queryParameters
            let limit = try Self.pageLimit(query.get("limit"), default: 100)
            let before = try query.get("cursor").flatMap { $0.isEmpty ? nil : $0 }.map { text -> Int64 in
                guard let value = Int64(text) else { throw APIError.invalidRequest("cursor is not one this server issued.") }
                return value
            }
            let principal = try context.requirePrincipal()
            var filter = try AuditFilter(principal: principal, reading: { query.get($0) })
            if let tenant = filter.tenantId { try service.authorize(principal, .auditRead, tenantId: tenant, productId: nil) }
            filter.tenants = principal.tenants(with: .auditRead)
            let entries = try await service.auditLog(filter, limit: limit + 1, beforeId: before)
            let page = Array(entries.prefix(limit))
            return try JSONBody.response(AuditPage(entries: page.map(AuditEntryBody.init), next_cursor: entries.count > limit ? page.last.map { String($0.id) } : nil))
        }
    }
}
