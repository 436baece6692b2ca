import Hummingbird

/// Releases (issue 51): drafts, their files, publishing and yanking.
extension AdminRoutes {
    /// The path of artifact uploads, which alone streams its body (the connection's deadline
    /// handler recognises it by this shape).
    static let artifactUploadPath = "/tenants/:tenant/products/:product/releases/:id/artifacts"

    func registerReleases(on admin: AdminRouter) {
        let (service, releases) = (self.service, self.releases)
        admin.post("/tenants/:tenant/products/:product/releases", .releasesPublish, body: CreateReleaseRequest.self) { body, _, context in
            let (tenantId, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
            let release = try await service.createRelease(tenantId: tenantId, productId: productId, body, actor: context.actor)
            // The product's Sparkle key exists from its first release on: the app ships it before any build is published.
            _ = try await releases?.updateSettings(tenantId: tenantId, productId: productId)
            return try JSONBody.response(try await service.releaseBodies([release])[0], status: .created)
        }
        admin.get("/tenants/:tenant/products/:product/releases", .productsRead) { request, context in
            let releases = try await service.releases(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                channel: request.uri.queryParameters.get("channel").flatMap { $0.isEmpty ? nil : String($0) }
            )
            return try JSONBody.response(["releases": try await service.releaseBodies(releases)])
        }
        admin.get("/tenants/:tenant/products/:product/releases/:id", .productsRead) { _, context in
            let release = try await service.release(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), id: try context.parameters.require("id")
            )
            return try JSONBody.response(try await service.releaseBodies([release])[0])
        }
        admin.putFile(RouterPath(Self.artifactUploadPath), .releasesPublish) { request, context in
            guard let releases else { throw APIError.notFound("Route") }
            let platform: String? = UpdateRoutes.query(request, "platform")
            let arch: String? = UpdateRoutes.query(request, "arch")
            let signature: String? = UpdateRoutes.query(request, "signature")
            let fileName: String? = UpdateRoutes.query(request, "filename")
            let upload = try ReleaseService.ArtifactUpload(platform: platform, arch: arch, signature: signature, fileName: fileName)
            let contentLength: Int64? = request.headers[.contentLength].flatMap { Int64($0) }
            let artifact = try await releases.uploadArtifact(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                releaseId: try context.parameters.require("id"), upload,
                contentLength: contentLength, body: request.body, actor: context.actor
            )
            return try JSONBody.response(ArtifactBody(artifact), status: .created)
        }
        for (action, state) in [("publish", Release.State.published), ("yank", .yanked)] {
            admin.post(RouterPath("/tenants/:tenant/products/:product/releases/:id/\(action)"), .releasesPublish) { _, context in
                let (tenantId, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
                let release = try await service.moveRelease(tenantId: tenantId, productId: productId, id: try context.parameters.require("id"), to: state, actor: context.actor)
                releases?.forgetFeed(tenantId: tenantId, productId: productId)
                return try JSONBody.response(try await service.releaseBodies([release])[0])
            }
        }
    }
}
