import Hummingbird

/// `/dashboard/t/<tenant>/<paddle|lemonsqueezy|polar>`: a merchant of record's settings (the
/// webhook secret and, for Paddle, the API key and environment; for Lemon Squeezy, whether test
/// orders count), the URL to give the provider, and the events it sent, with Retry for a
/// purchase that mapped to no key type.
struct MerchantsController: Sendable {
    let dashboard: DashboardRoutes
    var admin: AdminService { dashboard.admin }
    var pages: DashboardPages { dashboard.pages }

    struct PaddleForm: Decodable {
        @FormText var webhookSecret: String?
        @FormText var apiKey: String?
        @FormCheckbox var removeAPIKey: Bool
        @FormText var environment: String?
        enum CodingKeys: String, CodingKey {
            case webhookSecret = "webhook_secret", apiKey = "api_key", removeAPIKey = "remove_api_key", environment
        }
    }

    struct LemonSqueezyForm: Decodable {
        @FormText var webhookSecret: String?
        @FormCheckbox var acceptTestMode: Bool
        enum CodingKeys: String, CodingKey { case webhookSecret = "webhook_secret", acceptTestMode = "accept_test_mode" }
    }

    struct PolarForm: Decodable {
        @FormText var webhookSecret: String?
        enum CodingKeys: String, CodingKey { case webhookSecret = "webhook_secret" }
    }

    func register(on group: RouterGroup<DashboardContext>) {
        for provider in MerchantProvider.allCases {
            let page = group.signedIn(RouterPath("/t/:tenant/\(provider.rawValue)"), dashboard: dashboard, back: { Self.page($0, provider) })
            page.get(.paymentsRead) { _, context -> Response in
                pages.page("merchant", try await view(provider, context))
            }
            page.post("/events/:event/retry", .paymentsWrite) { _, context -> Response in
                let outcome = try await admin.retryMerchantEvent(
                    tenantId: TenantsController.tenantId(context), provider: provider, id: try context.parameters.require("event"), actor: try context.requireUser().actor
                )
                if outcome == .unmapped {
                    pages.flash(context, error: "The purchase still names no \(provider.mappingNoun) mapped to a key type (set \(provider.mappingField) on the key type).")
                } else {
                    pages.flash(context, "\(provider.displayName) event applied: \(outcome.rawValue).")
                }
                return .redirect(to: Self.page(context, provider))
            }
            page.post("/disconnect", .paymentsWrite) { _, context -> Response in
                try await admin.deleteMerchantSettings(tenantId: TenantsController.tenantId(context), provider: provider, actor: try context.requireUser().actor)
                pages.flash(context, "\(provider.displayName) disconnected: its webhook now answers 404.")
                return .redirect(to: Self.page(context, provider))
            }
            switch provider {
            case .paddle:
                page.post(.paymentsWrite, form: PaddleForm.self) { form, _, context -> Response in
                    let apiKey: String?? = form.removeAPIKey ? .some(nil) : form.apiKey.map { .some($0) } ?? .none
                    _ = try await admin.setMerchantSettings(
                        tenantId: TenantsController.tenantId(context), provider: .paddle, webhookSecret: form.webhookSecret, apiKey: apiKey,
                        environment: form.environment, actor: try context.requireUser().actor
                    )
                    return saved(context, provider)
                }
            case .lemonSqueezy:
                page.post(.paymentsWrite, form: LemonSqueezyForm.self) { form, _, context -> Response in
                    _ = try await admin.setMerchantSettings(
                        tenantId: TenantsController.tenantId(context), provider: .lemonSqueezy, webhookSecret: form.webhookSecret,
                        acceptTestMode: form.acceptTestMode, actor: try context.requireUser().actor
                    )
                    return saved(context, provider)
                }
            case .polar:
                page.post(.paymentsWrite, form: PolarForm.self) { form, _, context -> Response in
                    _ = try await admin.setMerchantSettings(
                        tenantId: TenantsController.tenantId(context), provider: .polar, webhookSecret: form.webhookSecret, actor: try context.requireUser().actor
                    )
                    return saved(context, provider)
                }
            }
        }
    }

    private func saved(_ context: DashboardContext, _ provider: MerchantProvider) -> Response {
        pages.flash(context, "\(provider.displayName) settings saved.")
        return .redirect(to: Self.page(context, provider))
    }

    static func page(_ context: DashboardContext, _ provider: MerchantProvider) -> String {
        TenantsController.tenantPage(context) + "/" + provider.rawValue
    }

    private func view(_ provider: MerchantProvider, _ context: DashboardContext) async throws -> MerchantView {
        let tenant = try await admin.requireTenant(TenantsController.tenantId(context))
        let settings = try await admin.storedMerchantSettings(tenantId: tenant.id, provider: provider)
        let events = try await admin.merchantEvents(tenantId: tenant.id, provider: provider, outcome: nil, limit: 50)
        let path = "/\(provider.rawValue)/webhook/\(tenant.id)"
        let hint = switch provider {
        case .paddle: "pdl_ntfset_…"
        case .lemonSqueezy: "the signing secret you typed in Lemon Squeezy"
        case .polar: "whsec_…"
        }
        return MerchantView(
            chrome: pages.chrome("\(provider.displayName) · \(tenant.name)", context), tenantId: tenant.id, tenantName: tenant.name,
            provider: provider.rawValue, providerName: provider.displayName, webhookURL: (dashboard.publicURL ?? "") + path,
            configured: settings != nil, isPaddle: provider == .paddle, isLemonSqueezy: provider == .lemonSqueezy,
            apiKeySet: settings?.sealedAPIKey != nil, sandbox: settings?.environment == "sandbox", acceptTestMode: settings?.acceptTestMode ?? false,
            secretHint: hint, mappingField: provider.mappingField, mappingNoun: provider.mappingNoun,
            events: events.map(PaymentEventRow.init), hasEvents: !events.isEmpty
        )
    }
}
