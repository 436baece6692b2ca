import Hummingbird

/// Signing keys (protocol 6.2): each tenant's, and the server-wide rotation.
extension AdminRoutes {
    /// Preparing, rotating, retiring and listing signing keys.
    func registerSigningKeys(on admin: AdminRouter) {
        // Protocol 6.2: each tenant's keys.
        admin.post("/tenants/:tenant/signing-keys/prepare", .signingKeysRotate) { _, context in
            let row = try await service.prepareSigningKey(tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(SigningKeyBody(kid: row.kid, public_key: row.publicKey, status: row.status.rawValue), status: .created)
        }
        admin.post("/tenants/:tenant/signing-keys/rotate", .signingKeysRotate, optionalBody: RotateSigningKeysRequest.self) { body, _, context in
            let rotated = try await service.rotateSigningKeys(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)[0]
            return try JSONBody.response(SigningKeyBody(kid: rotated.kid, public_key: rotated.publicKey), status: .created)
        }
        admin.post("/tenants/:tenant/signing-keys/:kid/retire", .signingKeysRotate) { _, context in
            let kid = try context.parameters.require("kid")
            try await service.retireSigningKey(kid: kid, tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(["kid": kid, "status": "retired"])
        }
        admin.get("/tenants/:tenant/signing-keys", .signingKeysRead) { _, context in
            let tenant = try await service.requireTenant(try context.parameters.require("tenant"))
            let rows = try await service.signingKeyRows(tenantId: tenant.id)
            return try JSONBody.response(["keys": rows.map { SigningKeyBody(kid: $0.kid, public_key: $0.publicKey, status: $0.status.rawValue, created_at: $0.createdAt) }])
        }
        // Protocol 4 and 6.2: the server-wide routes act on every tenant at once.
        admin.post("/signing-keys/rotate", .signingKeysRotateAll, optionalBody: RotateSigningKeysRequest.self) { body, _, context in
            let outcomes = try await service.rotateSigningKeys(tenantId: nil, body, actor: context.actor)
            return try JSONBody.response(ServerRotationBody(
                kid: outcomes[0].kid, public_key: outcomes[0].publicKey,
                tenants: outcomes.map { .init(tenant_id: $0.tenantId, kid: $0.kid, public_key: $0.publicKey, prepared: $0.promotedNext) }
            ), status: .created)
        }
        admin.post("/signing-keys/:kid/retire", .signingKeysRotateAll) { _, context in
            let kid = try context.parameters.require("kid")
            try await service.retireSigningKey(kid: kid, tenantId: nil, actor: context.actor)
            return try JSONBody.response(["kid": kid, "status": "retired"])
        }
        admin.get("/signing-keys", .signingKeysRead) { _, context in
            let visible = try context.requirePrincipal().tenants(with: .signingKeysRead)
            let rows = try await service.signingKeyRows().filter { visible.contains($0.tenantId) }
            return try JSONBody.response(["keys": rows.map {
                SigningKeyBody(kid: $0.kid, public_key: $0.publicKey, status: $0.status.rawValue, created_at: $0.createdAt, tenant_id: $0.tenantId)
            }])
        }
    }
}
