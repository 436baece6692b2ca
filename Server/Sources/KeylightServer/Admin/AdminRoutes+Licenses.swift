import Hummingbird

/// Licenses: issuing, listing, editing, bulk jobs, renewals, status changes, reminting, mail and seats.
extension AdminRoutes {
    /// A product's licenses and their instances.
    func registerLicenses(on admin: AdminRouter) {
        admin.post("/tenants/:tenant/products/:product/licenses", .licensesWrite, body: CreateLicenseRequest.self) { body, _, context in
            let (license, key) = try await service.createLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                body, actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license, licenseKey: key.text), status: .created)
        }
        admin.get("/tenants/:tenant/products/:product/licenses", .licensesRead) { request, context in
            let query = request.uri.queryParameters
            let (tenant, product) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
            let (licenses, next) = try await service.licensePage(
                tenantId: tenant, productId: product,
                try LicenseQuery(reading: { query.get($0) }, parameters: query.map { (String($0.key), String($0.value)) })
            )
            return try JSONBody.response(LicensePage(licenses: try await service.licenseBodies(licenses, tenantId: tenant, productId: product), next_cursor: next))
        }
        admin.get("/tenants/:tenant/products/:product/licenses/:id", .licensesRead) { _, context in
            let license = try await service.license(tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), id: try context.parameters.require("id"))
            let instances = try await service.instances(licenseId: license.id)
            return try JSONBody.response(try await service.licenseBody(license, instances: instances))
        }
        admin.patch("/tenants/:tenant/products/:product/licenses/:id", .licensesWrite, body: UpdateLicenseRequest.self) { body, _, context in
            let license = try await service.editLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), try body.edit(), actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/bulk", .licensesWrite, body: BulkLicenseRequest.self) { body, _, context in
            switch try await service.bulkJobs.create(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), body, actor: context.actor, admin: service
            ) {
            case .dryRun(let answer): return try JSONBody.response(answer)
            case .job(let job): return try JSONBody.response(job, status: .accepted)
            }
        }
        admin.get("/tenants/:tenant/products/:product/licenses/bulk/:job", .licensesRead) { _, context in
            try JSONBody.response(try await service.bulkJobs.status(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"), id: try context.parameters.require("job")
            ))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/renew", .licensesWrite, body: RenewLicenseRequest.self) { body, _, context in
            var edit = LicenseEdit()
            edit.renewal = try body.renewal()
            let license = try await service.editLicense(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), edit, actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license))
        }
        for (action, status) in [("revoke", LicenseStatus.revoked), ("suspend", .suspended), ("reinstate", .active)] {
            admin.post("/tenants/:tenant/products/:product/licenses/:id/\(action)", .licensesWrite) { _, context in
                let license = try await service.setStatus(
                    tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                    id: try context.parameters.require("id"), to: status, action: "license.\(action)", actor: context.actor
                )
                return try JSONBody.response(try await service.licenseBody(license))
            }
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/remint", .licensesRemint) { _, context in
            let (license, key) = try await service.remint(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), actor: context.actor
            )
            return try JSONBody.response(try await service.licenseBody(license, licenseKey: key.text))
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/email", .licensesMail, optionalBody: ResendEmailRequest.self) { body, _, context in
            // The body is optional: none (or `{}`) mails the address on file.
            let (license, to) = try await service.resendEmail(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                id: try context.parameters.require("id"), body ?? ResendEmailRequest(), by: try context.requirePrincipal()
            )
            return try JSONBody.response(ResendEmailBody(queued: true, license_id: license.id, to: to), status: .accepted)
        }
        admin.post("/tenants/:tenant/products/:product/licenses/:id/instances/:instance/deactivate", .seatsFree) { _, context in
            try await service.deactivateInstance(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                licenseId: try context.parameters.require("id"), instanceId: try context.parameters.require("instance"), actor: context.actor
            )
            return try JSONBody.response(["deactivated": true])
        }
    }
}
