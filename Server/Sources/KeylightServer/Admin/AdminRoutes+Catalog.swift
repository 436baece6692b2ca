import Hummingbird

/// The catalogue: tenants, products, their key types and offers, and the checkout key.
extension AdminRoutes {
    /// Tenants, products and key types; the key types' prices and offers, and the tenant's checkout key.
    func registerCatalog(on admin: AdminRouter) {
        admin.post("/tenants", .tenantsCreate, body: CreateTenantRequest.self) { body, _, context in
            let tenant = try await service.createTenant(body, actor: context.actor)
            return try JSONBody.response(TenantBody(id: tenant.id, name: tenant.name), status: .created)
        }
        admin.get("/tenants", .tenantsRead) { _, context in
            try JSONBody.response(["tenants": try await service.visibleTenants(try context.requirePrincipal()).map { TenantBody(id: $0.id, name: $0.name) }])
        }
        admin.post("/tenants/:tenant/products", .productsWrite, body: CreateProductRequest.self) { body, _, context in
            let (product, sdkKey) = try await service.createProduct(tenantId: try context.parameters.require("tenant"), body, actor: context.actor)
            return try JSONBody.response(ProductBody(product, sdkKey: sdkKey), status: .created)
        }
        admin.get("/tenants/:tenant/products", .productsRead) { _, context in
            let tenant = try await service.requireTenant(try context.parameters.require("tenant"))
            return try JSONBody.response(["products": try await service.products(tenantId: tenant.id).map { ProductBody($0) }])
        }
        let releases = self.releases
        admin.get("/tenants/:tenant/products/:product", .productsRead) { _, context in
            let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
            return try JSONBody.response(ProductBody(product, updates: try await releases?.updateSettings(tenantId: product.tenantId, productId: product.id)))
        }
        admin.patch("/tenants/:tenant/products/:product", .productsWrite, body: UpdateProductRequest.self) { body, _, context in
            let (tenantId, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
            let principal = try context.requirePrincipal()
            // Which key signs updates decides what every buyer's app installs.
            if body.sparkle_public_key != nil { try service.authorize(principal, .releasesPublish, tenantId: tenantId, productId: productId) }
            if case .some(.some(let key)) = body.sparkle_public_key { _ = try ReleaseService.sparklePublicKey(key) }
            let product = try await service.updateProduct(tenantId: tenantId, productId: productId, body, by: principal)
            let updates = if body.public_feed != nil || body.sparkle_public_key != nil {
                try await releases?.changeUpdateSettings(
                    tenantId: tenantId, productId: productId, publicFeed: body.public_feed, sparklePublicKey: body.sparkle_public_key, actor: principal.actor
                )
            } else {
                try await releases?.updateSettings(tenantId: tenantId, productId: productId)
            }
            return try JSONBody.response(ProductBody(product, updates: updates))
        }
        admin.post("/tenants/:tenant/products/:product/key-types", .productsWrite, body: CreateKeyTypeRequest.self) { body, _, context in
            let keyType = try await service.createKeyType(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                body, by: try context.requirePrincipal()
            )
            return try JSONBody.response(KeyTypeBody(keyType), status: .created)
        }
        admin.get("/tenants/:tenant/products/:product/key-types", .productsRead) { _, context in
            let product = try await service.requireProduct(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"))
            return try JSONBody.response(["key_types": try await service.keyTypes(tenantId: product.tenantId, productId: product.id).map(KeyTypeBody.init)])
        }
        admin.patch("/tenants/:tenant/products/:product/key-types/:id", .paymentsWrite, body: UpdateKeyTypeRequest.self) { body, _, context in
            let keyType = try await service.updateKeyType(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), body, actor: context.actor
            )
            return try JSONBody.response(KeyTypeBody(keyType))
        }
        admin.put("/tenants/:tenant/products/:product/key-types/:id/offers", .paymentsWrite, body: KeyTypeOffersRequest.self) { body, _, context in
            try JSONBody.response(try await service.setOffers(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                keyTypeId: try context.parameters.require("id"), body, actor: context.actor
            ))
        }
        admin.get("/tenants/:tenant/products/:product/key-types/:id/offers", .productsRead) { _, context in
            try JSONBody.response(try await service.offers(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), keyTypeId: try context.parameters.require("id")
            ))
        }
        admin.post("/tenants/:tenant/checkout-key", .paymentsWrite) { _, context in
            let key = try await service.rotateCheckoutKey(tenantId: try context.parameters.require("tenant"), actor: context.actor)
            return try JSONBody.response(["checkout_key": key], status: .created)
        }
    }
}
