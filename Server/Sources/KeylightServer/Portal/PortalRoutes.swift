import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Logging
import NIOCore

/// `/portal/<tenant>/<product>`: the customer portal (protocol 6.5). No account: the license key
/// is the proof of ownership. A customer enters the key, sees the devices using it, frees one,
/// turns an offline request into a response file, or submits a deactivation proof.
///
/// Server-rendered with the dashboard's template engine and stylesheet, and usable without
/// JavaScript. Every form carries the CSRF token of the visitor's sealed session cookie
/// (``PortalSession``); every POST counts against a per-address limit, and everything done with a
/// license against a per-license one. The full key is never written into a page, a cookie or a
/// log: after it is entered, only its hash (sealed) and masked form travel.
///
/// "Lost your key?" mails every license of the tenant bought with an address to that address.
/// It answers the same whether or not the address is known, and takes the same path either way
/// (a mail is always queued; one for an address without licenses is dropped when it is due), so
/// neither the page nor its timing tells a visitor whose address it is. It is limited per
/// recipient and per client address on top of the portal's per-address limit, with the limiters
/// the SDK's `lost-key` uses too (``LostKeyLimits``).
struct PortalRoutes: Sendable {
    /// Seats and offline files: the SDK API's own service.
    let licensing: LicensingService
    /// The product's settings, the lost-key mail, and the sealer of the session cookie.
    let admin: AdminService
    let renderer: DashboardRenderer
    let secureCookies: Bool
    let addressLimiter: RateLimiter<IPAddress>
    let licenseLimiter: RateLimiter<String>
    /// Shared with the SDK's `lost-key` (one budget per client and per recipient for both).
    let lostKeyLimits: LostKeyLimits
    let logger: Logger

    init(
        licensing: LicensingService, admin: AdminService, renderer: DashboardRenderer, secureCookies: Bool, limits: ServerLimits,
        lostKeyLimits: LostKeyLimits, logger: Logger
    ) {
        self.licensing = licensing
        self.admin = admin
        self.renderer = renderer
        self.secureCookies = secureCookies
        addressLimiter = RateLimiter(limit: limits.portalPerAddress, clock: admin.clock)
        licenseLimiter = RateLimiter(limit: limits.portalPerLicense, clock: admin.clock)
        self.lostKeyLimits = lostKeyLimits
        self.logger = logger
    }

    static let maxFormBytes = 64 * 1024

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        let portal = router.group("/portal/:tenant/:product")
        portal.get { request, context in
            try await answer(request, context, isPost: false) { _, product, session in
                (try await page(product, session), session)
            }
        }
        portal.post("/sign-in") { request, context in
            try await answer(request, context) { form, product, session in
                try await signIn(form, product, session)
            }
        }
        portal.post("/lost-key") { request, context in
            try await answer(request, context) { form, product, session in
                try await lostKey(form, product, session, client: context.rateLimitKey)
            }
        }
        portal.post("/sign-out") { request, context in
            try await answer(request, context) { _, _, session in
                var session = session
                session.forgetLicense()
                return (.redirect(to: path(of: context), type: .normal), session)
            }
        }
        portal.post("/devices/:instance/deactivate") { request, context in
            try await answer(request, context) { _, product, session in
                let (keyHash, session) = try opened(session)
                let instanceId = try Field.identifier(context.parameters.get("instance"), "instance")
                switch try await licensing.releaseSeat(keyHash: keyHash, instanceId: instanceId, product: product, change: InstanceChange(actor: .customer, how: .portal)) {
                case .licenseNotFound: throw PortalProblem.keyGone
                case .instanceNotFound: throw APIError.notFound("Device")
                case .invalidProof: throw APIError.offlineDeviceNeedsProof
                case .deactivated, .alreadyInactive: break
                }
                return (.redirect(to: path(of: context), type: .normal), session.with(notice: "The device was freed. Its slot can be used by another device now."))
            }
        }
        portal.post("/offline/activate") { request, context in
            try await answer(request, context) { form, product, session in
                let (keyHash, session) = try opened(session)
                let text = try Self.file(form, text: "request", file: "request_file", what: "an activation request")
                let response = try await licensing.offlineResponse(
                    keyHash: keyHash, requestText: text, product: product, change: InstanceChange(actor: .offline, how: .offlineRequest)
                )
                return (renderer.download(response), session)
            }
        }
        portal.post("/offline/deactivate") { request, context in
            try await answer(request, context) { form, product, session in
                let (keyHash, session) = try opened(session)
                let text = try Self.file(form, text: "proof", file: "proof_file", what: "a deactivation proof")
                try await licensing.deactivate(keyHash: keyHash, proofText: text, product: product, change: InstanceChange(actor: .offline, how: .offlineProof))
                return (.redirect(to: path(of: context), type: .normal), session.with(notice: "The offline device was freed."))
            }
        }
    }

    private func path(of context: KeylightRequestContext) -> String {
        "/portal/\(context.parameters.get("tenant") ?? "")/\(context.parameters.get("product") ?? "")"
    }

    /// The steps every portal request shares: the product (404 when unknown or its portal is off),
    /// then for a POST the per-address limit, the bounded form and the CSRF token; the action's
    /// failures become the portal page with the problem, at the error's status.
    private func answer(
        _ request: Request, _ context: KeylightRequestContext, isPost: Bool = true,
        _ action: (PortalForm, Product, PortalSession) async throws -> (Response, PortalSession)
    ) async throws -> Response {
        let tenantId = context.parameters.get("tenant") ?? "", productId = context.parameters.get("product") ?? ""
        let path = "/portal/\(tenantId)/\(productId)"
        let now = admin.clock.unixSeconds
        guard TenantPath.isValidId(tenantId), TenantPath.isValidId(productId),
              let product = try await admin.product(tenantId: tenantId, id: productId), product.portalEnabled else {
            return renderer.page("portal", PortalView(title: "Not found", productName: "Keylight", base: path, csrf: "", problem: "There is no customer portal at this address.", available: false), status: .notFound)
        }
        let existing = PortalSession.read(from: request, sealer: admin.sealer, path: path, now: now)
        var session = existing ?? .fresh(now: now)
        var status: HTTPResponse.Status = .ok
        var retryAfter: Int?
        do {
            var form = PortalForm()
            if isPost {
                form = try await PortalForm.readPost(
                    request, client: context.rateLimitKey, limiter: addressLimiter, accepts: existing.map { session in { session.accepts(csrf: $0) } },
                    expired: PortalProblem.expiredForm
                )
            }
            let (response, updated) = try await action(form, product, session)
            var answered = response
            session = updated
            session.expiresAt = now + PortalSession.lifetime
            if !isPost { (session.notice, session.problem) = (nil, nil) }  // shown once, by this page
            answered.setCookie(try session.cookie(sealer: admin.sealer, path: path, secure: secureCookies))
            return answered
        } catch let problem as PortalProblem {
            status = problem.status
            if problem == .keyGone { session.forgetLicense() }
            if problem == .expiredForm { session = .fresh(now: now) }
            session.problem = problem.message
        } catch let error as APIError {
            status = error.status
            retryAfter = error.retryAfter
            session.problem = error.message
            if error.code == "NOT_FOUND", error.message.hasPrefix("License") {
                session.forgetLicense()
                session.problem = PortalProblem.keyGone.message
            }
        } catch {
            logger.error("portal request failed", metadata: ["error": "\(type(of: error))"])
            status = .serviceUnavailable
            session.problem = "Something went wrong on our side; try again in a moment."
        }
        // The problem is shown on the page itself (not after a redirect), at the error's status.
        let problem = session.problem
        session.problem = nil
        var response = (try? await page(product, session, problem: problem, status: status))
            ?? renderer.page("portal", PortalView(title: "Error", productName: product.name, base: path, csrf: session.csrf, problem: problem), status: status)
        response.setCookie(try session.cookie(sealer: admin.sealer, path: path, secure: secureCookies))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The page for the session: the key form, or the license with its devices.
    private func page(_ product: Product, _ session: PortalSession, problem: String? = nil, status: HTTPResponse.Status = .ok) async throws -> Response {
        let base = "/portal/\(product.tenantId)/\(product.id)"
        var view = PortalView(title: "Your license", productName: product.name, base: base, csrf: session.csrf, notice: session.notice, problem: problem ?? session.problem)
        if let keyHash = session.keyHash, let masked = session.maskedKey,
           let (grant, instances) = try await licensing.activeInstances(keyHash: keyHash, product: product) {
            let now = admin.clock.unixSeconds
            let expired = grant.isExpired(at: now)
            view.license = .init(
                maskedKey: masked, status: grant.status == .active && expired ? "expired" : grant.status.rawValue,
                expires: grant.startsOnActivation ? "starts on first activation" : grant.expiresAt.map { DashboardFormat.time($0) } ?? "never", inUse: instances.count, limit: grant.activationLimit,
                devices: instances.map {
                    .init(id: $0.id, name: $0.name, activated: DashboardFormat.time($0.activatedAt),
                          lastSeen: DashboardFormat.time($0.lastSeenAt), offline: $0.isOffline)
                }
            )
            view.license?.full = instances.count >= grant.activationLimit
        }
        return renderer.page("portal", view, status: status)
    }

    private func signIn(_ form: PortalForm, _ product: Product, _ session: PortalSession) async throws -> (Response, PortalSession) {
        let key = try Field.licenseKey(form["license_key"]?.trimmingCharacters(in: .whitespacesAndNewlines))
        if case .limited(let retryAfter) = licenseLimiter.acquire(key.keyHash) { throw APIError.rateLimited(retryAfter: retryAfter) }
        guard let (grant, _) = try await licensing.activeInstances(keyHash: key.keyHash, product: product) else {
            throw PortalProblem.unknownKey
        }
        var session = session
        session.licenseId = grant.licenseId
        session.keyHash = key.keyHash
        session.maskedKey = key.masked(keepingPrefix: product.keyPrefix)
        // A new token once a license is open: one seen before the key was entered is worth nothing after.
        session.csrf = AccountController.newToken()
        return (.redirect(to: "/portal/\(product.tenantId)/\(product.id)", type: .normal), session)
    }

    /// Queues the lost-key mail for the address and answers the same notice whether or not any
    /// license was bought with it.
    private func lostKey(_ form: PortalForm, _ product: Product, _ session: PortalSession, client: IPAddress) async throws -> (Response, PortalSession) {
        guard admin.mailBuyers else { throw PortalProblem.noMail }
        if case .limited(let retryAfter) = lostKeyLimits.perClient.acquire(client) { throw APIError.rateLimited(retryAfter: retryAfter) }
        let email: String
        do {
            guard let parsed = try Field.email(form["email"]?.trimmingCharacters(in: .whitespaces)) else { throw PortalProblem.badEmail }
            email = parsed
            _ = try MailAddress(email)
        } catch {
            throw PortalProblem.badEmail
        }
        if case .limited(let retryAfter) = lostKeyLimits.perRecipient.acquire(email) { throw APIError.rateLimited(retryAfter: retryAfter) }
        try await admin.mailLostKeys(tenantId: product.tenantId, to: email)
        let notice = "If any license was bought with \(email), its key is on its way there now. Check your spam folder too if it has not arrived in a few minutes."
        return (.redirect(to: "/portal/\(product.tenantId)/\(product.id)", type: .normal), session.with(notice: notice))
    }

    /// The license the session opened, counted against its per-license limit.
    private func opened(_ session: PortalSession) throws -> (keyHash: String, PortalSession) {
        guard session.hasLicense, let keyHash = session.keyHash else { throw PortalProblem.noLicense }
        if case .limited(let retryAfter) = licenseLimiter.acquire(keyHash) { throw APIError.rateLimited(retryAfter: retryAfter) }
        return (keyHash, session)
    }

    /// A file's text from the form: the pasted text, else the uploaded file.
    static func file(_ form: PortalForm, text: String, file: String, what: String) throws -> String {
        let pasted = form[text]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let uploaded = form[file]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let chosen = pasted.isEmpty ? uploaded : pasted
        guard !chosen.isEmpty else { throw APIError.invalidRequest("Paste \(what) or choose its file.") }
        return try Field.offlineFile(chosen, text)
    }
}

/// The portal's own refusals, shown on its page.
enum PortalProblem: Error, Equatable {
    case expiredForm, noLicense, unknownKey, keyGone, badEmail, noMail

    var status: HTTPResponse.Status {
        switch self {
        case .badEmail: .badRequest
        case .noMail: .serviceUnavailable
        case .expiredForm: .forbidden
        case .noLicense: .forbidden
        case .unknownKey, .keyGone: .notFound
        }
    }

    var message: String {
        switch self {
        case .expiredForm: "The form expired. Try again on this page."
        case .noLicense: "Enter your license key first."
        case .unknownKey: "No license of this product has that key. Check it, including the letters before the first dash."
        case .keyGone: "That license key no longer works (it may have been replaced). Enter your current key."
        case .badEmail: "Enter the email address you bought with, like name@example.com."
        case .noMail: "This shop does not send mail from here. Contact the seller for your key."
        }
    }
}

extension PortalSession {
    func with(notice: String) -> PortalSession {
        var copy = self
        copy.notice = notice
        return copy
    }
}
