import Hummingbird
import NIOCore
import KeylightQR

/// A product's licenses: the searchable list, the CSV export, minting, and one license's page
/// with its devices and actions (revoke, suspend, reinstate, remint, deactivate a device).
struct LicensesController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }
    /// Draws license keys as QR codes; made once, used for every page.
    let qr = QRRenderer(quietZone: 4, darkColor: "#111827")

    init(dashboard: DashboardRoutes) {
        self.dashboard = dashboard
    }

    struct OfflineRequestForm: Decodable {
        @FormText var request: String?
    }

    struct CreateLicenseForm: Decodable {
        @FormText var keyTypeId: String?
        @FormText var customerEmail: String?
        @FormCheckbox var sendEmail: Bool
        enum CodingKeys: String, CodingKey { case keyTypeId = "key_type_id", customerEmail = "customer_email", sendEmail = "send_email" }
    }

    struct ResendForm: Decodable {
        @FormText var customerEmail: String?
        enum CodingKeys: String, CodingKey { case customerEmail = "customer_email" }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        let list = group.signedIn("/t/:tenant/p/:product/licenses", dashboard: dashboard, back: Self.listPage)
        list.get(.licensesRead) { request, context -> Response in
            try await listPage(request, context)
        }
        list.post(.licensesWrite, form: CreateLicenseForm.self) { form, _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            let (license, key) = try await admin.createLicense(tenantId: tenantId, productId: productId, CreateLicenseRequest(
                key_type_id: form.keyTypeId, license_key: nil, customer_email: form.customerEmail, expires_at: nil, updates_until: nil, send_email: form.sendEmail ? true : nil
            ), actor: try context.requireUser().actor)
            return pages.page("license", try await licenseView(tenantId, productId, license.id, context, newKey: key.text))
        }
        group.signedIn("/t/:tenant/p/:product", dashboard: dashboard).get("/licenses.csv", .licensesRead) { request, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            return try await LicenseCSV.response(admin, tenantId: tenantId, productId: productId, filters: try LicenseQuery(reading: { request.uri.queryParameters.get($0) }, fixedLimit: LicenseCSV.pageSize))
        }

        let license = group.signedIn("/t/:tenant/p/:product/licenses/:id", dashboard: dashboard, back: Self.licensePage)
        license.get(.licensesRead) { _, context -> Response in
            pages.page("license", try await licenseView(
                try context.parameters.require("tenant"), try context.parameters.require("product"), try context.parameters.require("id"), context, newKey: nil
            ))
        }
        license.post("/:action", .licensesWrite) { _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            let (id, actor) = (try context.parameters.require("id"), try context.requireUser().actor)
            let action = try context.parameters.require("action")
            let statuses: [String: LicenseStatus] = ["revoke": .revoked, "suspend": .suspended, "reinstate": .active]
            guard let status = statuses[action] else { throw APIError.notFound("Action") }
            _ = try await admin.setStatus(tenantId: tenantId, productId: productId, id: id, to: status, action: "license.\(action)", actor: actor)
            pages.flash(context, "License \(status == .active ? "reinstated" : status.rawValue).")
            return .redirect(to: Self.licensePage(context))
        }
        license.post("/remint", .licensesRemint) { _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            let (id, actor) = (try context.parameters.require("id"), try context.requireUser().actor)
            let (_, key) = try await admin.remint(tenantId: tenantId, productId: productId, id: id, actor: actor)
            var view = try await licenseView(tenantId, productId, id, context, newKey: key.text)
            view.chrome.flash = "New key minted; the old key no longer works."
            return pages.page("license", view)
        }
        license.post("/edit", .licensesWrite, form: LicenseEditForm.self) { form, _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            let id = try context.parameters.require("id")
            let current = try await admin.license(tenantId: tenantId, productId: productId, id: id)
            let edit = try form.edit(of: current, metadata: try await admin.licenseMetadata(id))
            guard !edit.isEmpty else {
                pages.flash(context, "Nothing changed.")
                return .redirect(to: Self.licensePage(context))
            }
            let license = try await admin.editLicense(tenantId: tenantId, productId: productId, id: id, edit, actor: try context.requireUser().actor)
            let keyType = try await admin.keyType(tenantId: tenantId, productId: productId, id: license.keyTypeId)
            let limit = license.activationLimitOverride ?? keyType?.activationLimit ?? 0
            pages.flash(context, license.activeInstances > limit
                ? "License saved. \(license.activeInstances) devices are in use, over the new limit of \(limit): none was freed, and \(LicenseEditView.refusedUntil(limit))."
                : "License saved.")
            return .redirect(to: Self.licensePage(context))
        }
        license.post("/renew", .licensesWrite, form: LicenseRenewForm.self) { form, _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            var edit = LicenseEdit()
            edit.renewal = try form.renewal()
            let license = try await admin.editLicense(tenantId: tenantId, productId: productId, id: try context.parameters.require("id"), edit, actor: try context.requireUser().actor)
            let date = edit.renewal?.field == .updatesUntil ? license.updatesUntil : license.expiresAt
            pages.flash(context, "Renewed: \(edit.renewal?.field == .updatesUntil ? "updates until" : "expires") \(date.map(DashboardFormat.day) ?? "never").")
            return .redirect(to: Self.licensePage(context))
        }
        license.post("/email", .licensesMail, form: ResendForm.self) { form, _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            let (_, to) = try await admin.resendEmail(
                tenantId: tenantId, productId: productId, id: try context.parameters.require("id"),
                ResendEmailRequest(customer_email: form.customerEmail), by: try context.requireUser().principal
            )
            pages.flash(context, "The key is queued to \(to).")
            return .redirect(to: Self.licensePage(context))
        }
        license.post("/offline-response", .licensesWrite, form: OfflineRequestForm.self) { form, _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            guard let text = form.request else { throw APIError.invalidRequest("Paste the activation request.") }
            let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
            let license = try await admin.license(tenantId: tenantId, productId: productId, id: try context.parameters.require("id"))
            let response = try await admin.licensing.offlineResponse(
                keyHash: license.keyHash, requestText: try Field.offlineFile(text, "request"), product: product,
                change: InstanceChange(actor: try context.requireUser().actor, how: .offlineRequest)
            )
            return pages.renderer.download(response)
        }
        license.post("/instances/:instance/deactivate", .seatsFree) { _, context -> Response in
            let (tenantId, productId) = ProductsController.ids(context)
            try await admin.deactivateInstance(
                tenantId: tenantId, productId: productId, licenseId: try context.parameters.require("id"),
                instanceId: try context.parameters.require("instance"), actor: try context.requireUser().actor
            )
            pages.flash(context, "Device deactivated; its slot is free.")
            return .redirect(to: Self.licensePage(context))
        }
    }

    @Sendable static func listPage(_ context: DashboardContext) -> String {
        ProductsController.productPage(context) + "/licenses"
    }

    @Sendable static func licensePage(_ context: DashboardContext) -> String {
        listPage(context) + "/" + (context.parameters.get("id") ?? "")
    }

    private func listPage(_ request: Request, _ context: DashboardContext) async throws -> Response {
        let (tenantId, productId) = (try context.parameters.require("tenant"), try context.parameters.require("product"))
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let query = request.uri.queryParameters
        let email = query.get("email").flatMap { $0.isEmpty ? nil : $0 }
        let suffix = query.get("key_suffix").flatMap { $0.isEmpty ? nil : $0 }
        let status = query.get("status").flatMap { $0.isEmpty ? nil : $0 }
        let (licenses, next) = try await admin.licensePage(tenantId: tenantId, productId: productId, try LicenseQuery(reading: { query.get($0) }, fixedLimit: 50))
        let now = admin.clock.unixSeconds
        let base = Self.listPage(context)
        let filters = [("email", email), ("key_suffix", suffix), ("status", status)].compactMap { name, value in value.map { (name, $0) } }
        return pages.page("licenses", LicensesView(
            chrome: pages.chrome("Licenses · \(product.name)", context), tenantId: tenantId, productId: productId, productName: product.name,
            email: email, keySuffix: suffix,
            statuses: [StatusOption(value: "", label: "any status", selected: status == nil)]
                + LicenseStatus.allCases.map { StatusOption(value: $0.rawValue, label: $0.rawValue, selected: status == $0.rawValue) },
            licenses: licenses.map { LicenseRow($0, now: now) },
            nextURL: next.map { base + "?" + FormEncoding.encode(filters + [("cursor", $0)]) },
            csvURL: base + ".csv" + (filters.isEmpty ? "" : "?" + FormEncoding.encode(filters)),
            keyTypes: try await admin.keyTypes(tenantId: tenantId, productId: productId).map { KeyTypeOption(id: $0.id, label: $0.displayName) },
            canMail: admin.mailBuyers
        ))
    }

    private func licenseView(_ tenantId: String, _ productId: String, _ id: String, _ context: DashboardContext, newKey: String?) async throws -> LicenseView {
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let license = try await admin.license(tenantId: tenantId, productId: productId, id: id)
        let instances = try await admin.instances(licenseId: license.id)
        let keyTypes = try await admin.keyTypes(tenantId: tenantId, productId: productId)
        let keyType = keyTypes.first { $0.id == license.keyTypeId }
        let metadata = try await admin.licenseMetadata(license.id)
        let now = admin.clock.unixSeconds
        var row = LicenseRow(license, now: now)
        if license.paymentSource == "appstore", let origin = try await admin.appStoreOrigin(tenantId: tenantId, licenseId: license.id) {
            row.source = "App Store, original transaction \(origin.originalTransactionId) (\(origin.environment))"
        }
        return LicenseView(
            chrome: pages.chrome("License …\(license.maskedKey.suffix(4))", context), tenantId: tenantId, productId: productId, productName: product.name,
            license: row,
            instances: instances.map(InstanceRow.init),
            newKey: newKey, newKeyQR: try newKey.map { qr.svg(try QRCode(text: $0, errorCorrection: .medium)) },
            canRevoke: license.status != .revoked, canSuspend: license.status == .active, canReinstate: license.status != .active,
            seats: LicenseView.seats(keyType: keyType, limit: license.activationLimitOverride, instances: instances, now: now),
            edit: LicenseEditView(license: license, keyType: keyType, keyTypes: keyTypes, metadata: metadata),
            updates: license.updatesUntil.map { "until " + DashboardFormat.day($0) },
            canMail: admin.mailBuyers, keyRecoverable: try await admin.keyRecoverable(licenseId: license.id),
            mails: try await admin.mails(licenseId: license.id).map(MailRow.init)
        )
    }
}
