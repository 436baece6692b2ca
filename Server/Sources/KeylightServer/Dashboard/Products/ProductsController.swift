import Hummingbird

/// A product's page (settings, charts, key types, the app's Info.plist entries and Swift) and its forms.
struct ProductsController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct CreateProductForm: Decodable {
        @FormText var id: String?
        @FormText var name: String?
        @FormText var keyPrefix: String?
        @FormText var trialDurationDays: String?
        @FormCheckbox var freeTierEnabled: Bool
        enum CodingKeys: String, CodingKey {
            case id, name, keyPrefix = "key_prefix", trialDurationDays = "trial_duration_days", freeTierEnabled = "free_tier_enabled"
        }
    }

    struct UpdateProductForm: Decodable {
        @FormText var name: String?
        @FormText var trialDurationDays: String?
        @FormCheckbox var freeTierEnabled: Bool
        @FormCheckbox var portalEnabled: Bool
        /// Inverted on purpose: a form without the box (a page from before it existed) keeps the key required.
        @FormCheckbox var sdkKeyOptional: Bool
        enum CodingKeys: String, CodingKey {
            case name, trialDurationDays = "trial_duration_days", freeTierEnabled = "free_tier_enabled", portalEnabled = "portal_enabled"
            case sdkKeyOptional = "sdk_key_optional"
        }
    }

    struct CreateKeyTypeForm: Decodable {
        @FormText var id: String?
        @FormText var displayName: String?
        @FormText var activationLimit: String?
        @FormText var durationDays: String?
        @FormCheckbox var fallbackAccess: Bool
        @FormText var leaseTTLDays: String?
        @FormText var offlineLeaseDays: String?
        @FormCheckbox var floating: Bool
        @FormText var heartbeatSeconds: String?
        /// Whole percent (the API's `overage` × 100).
        @FormText var overagePercent: String?
        @FormText var updatesDays: String?
        /// Codes separated by commas or spaces.
        @FormText var entitlements: String?
        @FormText var stripePriceId: String?
        @FormText var stripeMode: String?
        /// `purchase` or `first_activation`.
        @FormText var expiresFrom: String?
        enum CodingKeys: String, CodingKey {
            case expiresFrom = "expires_from"
            case id, displayName = "display_name", activationLimit = "activation_limit", durationDays = "duration_days",
                 fallbackAccess = "fallback_access", leaseTTLDays = "lease_ttl_days", offlineLeaseDays = "offline_lease_days", entitlements,
                 stripePriceId = "stripe_price_id", stripeMode = "stripe_mode", floating, heartbeatSeconds = "heartbeat_seconds",
                 overagePercent = "overage_percent", updatesDays = "updates_days"
        }
    }

    struct KeyTypeStripeForm: Decodable {
        @FormText var stripePriceId: String?
        @FormText var stripeMode: String?
        enum CodingKeys: String, CodingKey { case stripePriceId = "stripe_price_id", stripeMode = "stripe_mode" }
    }

    /// A key type's ids at each merchant of record; a blank field unmaps it.
    struct KeyTypeMerchantsForm: Decodable {
        @FormText var paddlePriceId: String?
        @FormText var lemonSqueezyVariantId: String?
        @FormText var polarProductId: String?
        @FormText var appStoreProductId: String?
        enum CodingKeys: String, CodingKey {
            case paddlePriceId = "paddle_price_id", lemonSqueezyVariantId = "lemonsqueezy_variant_id", polarProductId = "polar_product_id"
            case appStoreProductId = "appstore_product_id"
        }
    }

    /// The product's App Store app; a blank bundle id removes it, no box checked means Production only.
    struct AppStoreForm: Decodable {
        @FormText var bundleId: String?
        @FormCheckbox var production: Bool
        @FormCheckbox var sandbox: Bool
        enum CodingKeys: String, CodingKey { case bundleId = "appstore_bundle_id", production = "appstore_production", sandbox = "appstore_sandbox" }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        group.signedIn("/t/:tenant/products", dashboard: dashboard, back: TenantsController.tenantPage).post(.productsWrite, form: CreateProductForm.self) { form, request, context -> Response in
            let tenantId = TenantsController.tenantId(context)
            let (product, sdkKey) = try await admin.createProduct(tenantId: tenantId, CreateProductRequest(
                id: form.id, name: form.name, key_prefix: form.keyPrefix?.uppercased(),
                trial_duration_days: try DashboardForm.wholeNumber(form.trialDurationDays, label: "Trial days"), free_tier_enabled: form.freeTierEnabled
            ), actor: try context.requireUser().actor)
            var view = try await productView(tenantId, product.id, request, context)
            view.sdkKey = sdkKey
            view.snippet = AppSnippet(product: product, sdkKey: sdkKey, serverURL: view.serverURL, keys: admin.keyRing.current[product.tenantId])
            return pages.page("product", view)
        }

        let product = group.signedIn("/t/:tenant/p/:product", dashboard: dashboard, back: Self.productPage)
        product.get(.productsRead) { request, context -> Response in
            pages.page("product", try await productView(try context.parameters.require("tenant"), try context.parameters.require("product"), request, context))
        }
        product.post(.productsWrite, form: UpdateProductForm.self) { form, _, context -> Response in
            let (tenantId, productId) = Self.ids(context)
            _ = try await admin.requireProduct(tenantId: tenantId, productId: productId)
            _ = try await admin.updateProduct(tenantId: tenantId, productId: productId, UpdateProductRequest(
                name: form.name, trial_duration_days: try DashboardForm.wholeNumber(form.trialDurationDays, label: "Trial days"), free_tier_enabled: form.freeTierEnabled,
                portal_enabled: form.portalEnabled, sdk_key_required: !form.sdkKeyOptional
            ), by: try context.requireUser().principal)
            pages.flash(context, "Product saved.")
            return .redirect(to: Self.productPage(context))
        }
        product.post("/key-types", .productsWrite, form: CreateKeyTypeForm.self) { form, _, context -> Response in
            let (tenantId, productId) = Self.ids(context)
            let entitlements = (form.entitlements ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
            // Range-checked before the multiplication: a form value near Int.max must be a 400, not a trap.
            let ttlDays = try DashboardForm.wholeNumber(form.leaseTTLDays, label: "Lease TTL").map { days throws(APIError) in
                try Field.integer(days, "lease_ttl_days", in: 1...366)
            }
            let overage = try DashboardForm.wholeNumber(form.overagePercent, label: "Overage").map { percent throws(APIError) in
                Double(try Field.integer(percent, "overage_percent", in: 0...100)) / 100
            }
            let keyType = try await admin.createKeyType(tenantId: tenantId, productId: productId, CreateKeyTypeRequest(
                id: form.id, display_name: form.displayName, activation_limit: try DashboardForm.wholeNumber(form.activationLimit, label: "Activation limit"),
                duration_days: try DashboardForm.wholeNumber(form.durationDays, label: "Duration"), fallback_access: form.fallbackAccess,
                lease_ttl_seconds: ttlDays.map { Int64($0) * 86_400 }, entitlements: entitlements,
                stripe_price_id: form.stripePriceId, stripe_mode: form.stripeMode,
                offline_lease_days: try DashboardForm.wholeNumber(form.offlineLeaseDays, label: "Offline lease"),
                floating: form.floating, heartbeat_seconds: try DashboardForm.wholeNumber(form.heartbeatSeconds, label: "Heartbeat"),
                overage: overage, updates_days: try DashboardForm.wholeNumber(form.updatesDays, label: "Updates"), expires_from: form.expiresFrom
            ), by: try context.requireUser().principal)
            pages.flash(context, "Key type \(keyType.displayName) created.")
            return .redirect(to: Self.productPage(context))
        }
        product.post("/key-types/:keyType/stripe", .paymentsWrite, form: KeyTypeStripeForm.self) { form, _, context -> Response in
            let (tenantId, productId) = Self.ids(context)
            _ = try await admin.updateKeyType(
                tenantId: tenantId, productId: productId, id: try context.parameters.require("keyType"),
                UpdateKeyTypeRequest(stripePriceId: .some(form.stripePriceId), stripeMode: form.stripeMode), actor: try context.requireUser().actor
            )
            pages.flash(context, "Stripe price saved.")
            return .redirect(to: Self.productPage(context))
        }
        product.post("/key-types/:keyType/merchants", .paymentsWrite, form: KeyTypeMerchantsForm.self) { form, _, context -> Response in
            let (tenantId, productId) = Self.ids(context)
            _ = try await admin.updateKeyType(
                tenantId: tenantId, productId: productId, id: try context.parameters.require("keyType"),
                UpdateKeyTypeRequest(paddlePriceId: .some(form.paddlePriceId), lemonSqueezyVariantId: .some(form.lemonSqueezyVariantId), polarProductId: .some(form.polarProductId),
                                     appStoreProductId: .some(form.appStoreProductId)),
                actor: try context.requireUser().actor
            )
            pages.flash(context, "Merchant-of-record mapping saved.")
            return .redirect(to: Self.productPage(context))
        }
        product.post("/appstore", .paymentsWrite, form: AppStoreForm.self) { form, _, context -> Response in
            let (tenantId, productId) = Self.ids(context)
            _ = try await admin.requireProduct(tenantId: tenantId, productId: productId)
            let environments = [form.production ? "Production" : nil, form.sandbox ? "Sandbox" : nil].compactMap { $0 }
            _ = try await admin.updateProduct(tenantId: tenantId, productId: productId, UpdateProductRequest(
                appstore_bundle_id: .some(form.bundleId), appstore_environments: .some(environments.isEmpty ? nil : environments)
            ), by: try context.requireUser().principal)
            pages.flash(context, "App Store settings saved.")
            return .redirect(to: Self.productPage(context))
        }
    }

    static func ids(_ context: DashboardContext) -> (tenant: String, product: String) {
        (context.parameters.get("tenant") ?? "", context.parameters.get("product") ?? "")
    }

    @Sendable static func productPage(_ context: DashboardContext) -> String {
        let (tenant, product) = ids(context)
        return "/dashboard/t/\(tenant)/p/\(product)"
    }

    private func productView(_ tenantId: String, _ productId: String, _ request: Request, _ context: DashboardContext) async throws -> ProductView {
        let tenant = try await admin.requireTenant(tenantId)
        let product = try await admin.requireProduct(tenantId: tenantId, productId: productId)
        let charts = try await ProductCharts.load(admin, tenantId: tenantId, productId: productId, now: admin.clock.unixSeconds)
        let insights = try context.requireUser().principal.holds(.insightsRead, tenantId: tenantId, productId: productId)
        let serverURL = dashboard.serverURL(request)
        return ProductView(
            chrome: pages.chrome(product.name, context), tenantId: tenant.id, tenantName: tenant.name, product: ProductRow(product),
            sdkKey: nil, snippet: AppSnippet(product: product, sdkKey: nil, serverURL: serverURL, keys: admin.keyRing.current[product.tenantId]),
            publicURL: dashboard.publicURL, serverURL: serverURL,
            keyTypes: try await admin.keyTypes(tenantId: tenantId, productId: productId).map(KeyTypeRow.init),
            statusChart: charts.status,
            activationChart: insights ? charts.activations : "", validationChart: insights ? charts.validations : ""
        )
    }
}
