import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import KeylightCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// What the server did on start-up that its operator must know.
public struct StartupReport: Sendable {
    /// The admin token, when this start created it: shown once, never stored in clear.
    public var createdAdminToken: String?
    public var appliedMigrations: [String]
    /// Tenants and the kid each signs with.
    public var signingKids: [String: String]
}

/// The assembled server: the Hummingbird application and what start-up did.
public struct KeylightServer: Sendable {
    public let application: Application<SlashedPathResponder<RouterResponder<KeylightRequestContext>>>
    public let report: StartupReport
    /// The server's database (closed by the application at shutdown), for tools such as bulk import.
    public let database: Database
    let keyRing: KeyRing
    let signer: ResponseSigner
    /// Delivers outbound webhooks (its service runs with the application; tests also drive it directly).
    let webhooks: WebhookDispatcher
    /// Buffered writes the final flush could not make (filled at shutdown).
    public let unwritten: UnwrittenData
    let flusher: ActivityFlusher
    /// What `/readyz` answers; drained when graceful shutdown begins.
    let readiness: Readiness
    /// The admin service the routes use (tests reach the sealer through it).
    let admin: AdminService
    /// The admin API's routes and the body fields each takes.
    public let adminRoutes: RouteTable
    /// The signed-in dashboard's routes and the form fields each takes.
    public var dashboardRoutes: RouteTable { dashboard.routes }
    let dashboard: DashboardRoutes
    /// Artifacts, feeds and downloads (issue 51).
    var releases: ReleaseService? = nil
}

extension KeylightServer {
    /// Writes the validation data buffered so far (validation times, usage counts, device days)
    /// now rather than at the next flush: for tools that measure what a load cost, such as
    /// `keylight-bench`, and tests.
    public func writeBufferedActivity() async {
        await flusher.writeAll(final: false)
    }
}

/// Opens the database, applies migrations, loads or creates the signing key and admin token,
/// and builds the application. Shared by `keylight serve` and the tests.
public func buildApplication(
    configuration: ServerConfiguration,
    logger: Logger,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) async throws -> KeylightServer {
    // Read first: a bad root file is the operator's error, said before anything is opened.
    let appStoreRoots = configuration.appStoreRootCertificateFiles.isEmpty
        ? try AppleRootCertificates.apple() : try AppleRootCertificates.load(pemFiles: configuration.appStoreRootCertificateFiles)
    let database = if let url = configuration.databaseURL {
        try await PostgresStorage.open(url: url, poolSize: configuration.poolSize, searchPath: configuration.searchPath, logger: logger)
    } else {
        try await Database.sqlite(path: configuration.databasePath, poolSize: configuration.poolSize, logger: logger)
    }
    do {
        return try await assemble(database: database, configuration: configuration, appStoreRoots: appStoreRoots, logger: logger, onServerRunning: onServerRunning)
    } catch {
        await database.close()
        throw error
    }
}

func assemble(
    database: Database,
    configuration: ServerConfiguration,
    appStoreRoots: AppleRootCertificates,
    logger: Logger,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void
) async throws -> KeylightServer {
    let clock = configuration.clock
    if configuration.backups != nil, !database.capabilities.backsUpIntoFile { throw BackupError.notSQLite }
    let applied = try await database.migrate(logger: logger, clock: clock)
    let sealer: SecretSealer
    if let path = configuration.resolvedMasterKeyPath {
        sealer = try SecretSealer.load(environmentValue: configuration.masterKey, path: path)
    } else if let key = configuration.masterKey {
        sealer = try SecretSealer.load(environmentValue: key, path: "")
    } else if configuration.databaseURL != nil {
        throw StorageError.noMasterKey
    } else {
        sealer = .ephemeral()
    }
    // From here on every change also records its webhook events.
    let database = database.recordingWebhooks(sealer: sealer)
    let keyRing = KeyRing(database: database, sealer: sealer, clock: clock, logger: logger)
    try await keyRing.loadCreatingIfNeeded()

    // The owner token: the configuration's (stored, so it replaces any earlier one for good: a
    // token once replaced never works again, even after the variable is removed), else the one
    // created on first start. Requests read the stored hash, so `keylight token rotate` holds at once.
    var createdToken: String?
    if let token = configuration.adminToken {
        try await database.replaceAdminToken(with: token, now: clock.unixSeconds, actor: .system)
    } else {
        let candidate = AdminToken.generate()
        let (_, created) = try await database.settingCreatingIfAbsent(AdminToken.setting, value: AdminToken.hash(candidate))
        if created { createdToken = candidate }
    }

    let metrics = ServerMetrics()
    let activity = ActivityBuffer()
    let unwritten = UnwrittenData()
    let flusher = ActivityFlusher(buffer: activity, database: database, schedule: configuration.validationTimes, unwritten: unwritten, logger: logger)
    let licensing = LicensingService(database: database, keyRing: keyRing, clock: clock, activity: activity, metrics: metrics, licenseLimit: configuration.limits.perLicense)
    let signer = ResponseSigner(database: database, keyRing: keyRing, sealer: sealer, clock: clock)
    try await signer.refresh()
    let addressPolicy = AddressPolicy(allowPrivate: configuration.webhookAllowPrivate)
    let releases = ReleaseService(
        database: database, sealer: sealer, keyRing: keyRing, clock: clock, configuration: configuration.releases,
        artifactsDirectory: configuration.resolvedArtifactsDirectory, publicURL: configuration.publicURL, logger: logger
    )
    try await releases.store.prepare()
    if configuration.databaseURL != nil, configuration.releases.artifactsDirectory == nil {
        logger.notice("release files are kept in ./keylight-artifacts: with several processes, give each --artifacts-dir on a path they all mount")
    }
    let admin = AdminService(
        database: database, keyRing: keyRing, sealer: sealer, clock: clock, licensing: licensing, signer: signer, addressPolicy: addressPolicy,
        mailFrom: configuration.mail?.from, publicURL: configuration.publicURL, insightsRetentionDays: configuration.insightsRetentionDays
    )

    // One outbound client for Stripe (webhook deliveries make their own, see the transport);
    // redirects are answers, not instructions.
    let httpClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(30))),
        backgroundActivityLogger: logger
    )
    // Lookups of webhook hosts block a thread each; they get threads of their own.
    let resolverPool = NIOThreadPool(numberOfThreads: 4)
    resolverPool.start()
    var webhooks = WebhookDispatcher(
        database: database, sealer: sealer,
        transport: HTTPClientWebhookTransport(eventLoopGroup: HTTPClient.defaultEventLoopGroup, resolver: configuration.webhookResolver ?? SystemHostResolver(pool: resolverPool), policy: addressPolicy),
        clock: clock, logger: logger
    )
    webhooks.requestTimeout = configuration.webhookTimeout
    webhooks.pollInterval = configuration.webhookPollInterval
    let checkout = CheckoutService(
        database: database, sealer: sealer, stripe: StripeHTTPAPI(client: httpClient, baseURL: configuration.stripeAPIBaseURL, timeout: configuration.stripeRequestTimeout),
        clock: clock, logger: logger
    )
    let hasher = PasswordHasher(threads: configuration.passwordHashThreads, capacity: configuration.passwordHashQueue)
    var accounts = DashboardAccounts(database: database, hasher: hasher, clock: clock, sealer: sealer)
    accounts.cost = configuration.bcryptCost
    let sessions = SQLSessionStore(database: database, clock: clock)
    let dashboard = DashboardRoutes(
        admin: admin, releases: releases, accounts: accounts, renderer: try await DashboardRenderer.load(), sessions: sessions,
        loginLimiter: RateLimiter(limit: configuration.limits.signIns, clock: clock), publicURL: configuration.publicURL,
        secureCookies: configuration.publicURL?.lowercased().hasPrefix("https://") ?? false, logger: logger
    )
    let readiness = Readiness(database: database, keyRing: keyRing)
    let backups: [any Service] = configuration.backups.map {
        [BackupService(database: database, schedule: $0, clock: clock, metrics: metrics, logger: logger)]
    } ?? []
    let mail: [any Service] = configuration.mail.map {
        [MailService(
            database: database, composer: MailComposer(database: database, sealer: sealer, from: $0.from, publicURL: configuration.publicURL),
            client: SMTPClient(settings: $0.smtp), configuration: $0, clock: clock, metrics: metrics, logger: logger
        )]
    } ?? []
    let lookups = PaddleCustomerLookups(
        database: database, sealer: sealer, api: PaddleHTTPAPI(client: httpClient, baseURL: configuration.paddleAPIBaseURL, timeout: configuration.paddleRequestTimeout),
        clock: clock, mailBuyers: configuration.mail != nil, logger: logger
    )
    let appStore = AppStoreExchange(licensing: licensing, sealer: sealer, verifier: AppStoreSignedData(roots: appStoreRoots))
    let adminRoutes = RouteTable(prefix: "/admin/v1")
    let router = buildRouter(
        licensing: licensing, admin: admin, checkout: checkout, dashboard: dashboard, keyRing: keyRing, metrics: metrics, signer: signer,
        limits: configuration.limits, trustedProxies: configuration.trustedProxies, readiness: readiness,
        adminRoutes: adminRoutes, appStore: appStore, releases: releases
    )
    let application = Application(
        responder: SlashedPathResponder(base: router.buildResponder()),
        server: .guardedHTTP1(limits: configuration.connections, gauge: ConnectionGauge(limit: configuration.connections.maxConnections)),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "keylight"),
        // Shut down in reverse order: stop webhook delivery, flush validation times, stop key
        // refresh, close the outbound HTTP client, then close the database.
        services: [
            AtShutdown { await database.close() },
            AtShutdown { try await httpClient.shutdown() },
            // Not awaited: a lookup stuck in a slow DNS server must not hold up the exit.
            AtShutdown { resolverPool.shutdownGracefully { _ in } },
            PeriodicService.refreshing(keyRing, every: configuration.keyRefreshInterval, logger: logger),
            PeriodicService.rotating(signer, every: configuration.keyRefreshInterval, logger: logger),
            PeriodicService.flushing(flusher, every: configuration.activityFlushInterval),
            webhooks,
            AtShutdown { await hasher.shutdown() },
            PeriodicService.sweepingSeats(of: database, every: configuration.seatSweepInterval, clock: clock, metrics: metrics, logger: logger),
            PeriodicService(interval: configuration.customerLookupInterval, tick: { await lookups.lookUpDue() }),
            PeriodicService(interval: configuration.insightsRollupInterval, tick: { [insights = admin.insights] in await insights.rollUpAndPrune(logger: logger) }),
            PeriodicService(interval: configuration.bulkJobInterval, tick: { [bulkJobs = admin.bulkJobs] in await bulkJobs.runPending() }),
            PeriodicService(interval: configuration.reminderSweepInterval, tick: { [reminders = admin.reminders] in await reminders.sweep() }),
        ] + backups + mail + [
            PeriodicService(interval: .seconds(600), tick: {
                _ = try? await sessions.purgeExpired()
                _ = try? await database.pruneKeyless(seenBefore: clock.unixSeconds - configuration.keylessRetentionDays * 86_400)
                _ = try? await database.purgeDeliveryPayloads(finishedBefore: clock.unixSeconds - WebhookDispatcher.payloadRetentionDays * 86_400)
                _ = try? await database.purgeUncollectedCheckoutKeys(mintedBefore: clock.unixSeconds - checkout.pickupWindow)
                _ = try? await database.purgeKeptStripeEvents(receivedBefore: clock.unixSeconds - WebhookDispatcher.payloadRetentionDays * 86_400)
                _ = try? await database.purgeKeptMerchantEvents(receivedBefore: clock.unixSeconds - WebhookDispatcher.payloadRetentionDays * 86_400)
                _ = try? await database.purgeLostKeyMails(finishedBefore: clock.unixSeconds - MailService.lostKeyRetentionDays * 86_400)
                _ = try? await database.purgeSignInLinks(expiredBefore: clock.unixSeconds - 86_400)
                _ = try? await database.purgeIdempotencyKeys(now: clock.unixSeconds)
                _ = try? await database.purgeUserSessions(before: clock.unixSeconds - 86_400)
                _ = try? await database.purgeLoginThrottles(before: clock.unixSeconds - 86_400)
                _ = try? await database.purgeInvitations(now: clock.unixSeconds, closedBefore: clock.unixSeconds - 90 * 86_400)
            }),
        ],
        onServerRunning: onServerRunning,
        logger: logger
    )
    return KeylightServer(
        application: application,
        report: StartupReport(createdAdminToken: createdToken, appliedMigrations: applied, signingKids: keyRing.current.tenants.mapValues(\.active.kid)),
        database: database, keyRing: keyRing, signer: signer, webhooks: webhooks, unwritten: unwritten, flusher: flusher, readiness: readiness,
        admin: admin, adminRoutes: adminRoutes, dashboard: dashboard, releases: releases
    )
}

/// The routes, in middleware order: observation (ids, errors, metrics) around everything, the
/// SDK routes' own answer middleware (outcome field, signatures) around theirs, and the
/// per-address limit around every API.
func buildRouter(
    licensing: LicensingService, admin: AdminService, checkout: CheckoutService, dashboard: DashboardRoutes, keyRing: KeyRing, metrics: ServerMetrics, signer: ResponseSigner?,
    limits: ServerLimits, trustedProxies: TrustedProxies = .none, readiness: Readiness? = nil,
    adminRoutes: RouteTable = RouteTable(prefix: "/admin/v1"), appStore: AppStoreExchange? = nil, releases: ReleaseService? = nil
) -> Router<KeylightRequestContext> {
    let built = Router(context: KeylightRequestContext.self, options: .autoGenerateHeadEndpoints)
    let router = MethodRecordingRouter(built)
    router.add(middleware: RequestObservationMiddleware(metrics: metrics, trustedProxies: trustedProxies))
    let ops = OpsRoutes(keyRing: keyRing, metrics: metrics, readiness: readiness ?? Readiness(database: keyRing.database, keyRing: keyRing))
    ops.register(on: router)
    // One limiter for every API a client address reaches; the SDK routes apply it inside their
    // own middleware, so their 429s are signed like any other answer.
    let addressLimit = AddressRateLimitMiddleware(limiter: RateLimiter(limit: limits.perAddress, clock: licensing.clock))
    // "Lost your key?" has one budget per client and per recipient, through the portal or the SDK.
    let lostKeyLimits = LostKeyLimits(limits: limits, clock: admin.clock)
    SDKRoutes(
        service: licensing, limits: limits, signer: signer, addressLimit: addressLimit, admin: admin, lostKeyLimits: lostKeyLimits, appStore: appStore
    ).register(on: router)
    router.add(middleware: addressLimit)
    ops.registerTenantKeysets(on: router)
    AdminRoutes(service: admin, limits: limits, table: adminRoutes, releases: releases).register(on: router)
    if let releases { UpdateRoutes(releases: releases).register(on: router) }
    StripeWebhookRoutes(admin: admin).register(on: router)
    MerchantWebhookRoutes(admin: admin).register(on: router)
    if let appStore { AppStoreNotificationRoutes(admin: admin, verifier: appStore.verifier).register(on: router) }
    CheckoutRoutes(service: checkout, limits: limits).register(on: router)
    dashboard.register(on: router)
    // The customer portal: the dashboard's template engine and stylesheet, the SDK API's service.
    PortalRoutes(
        licensing: licensing, admin: admin, renderer: dashboard.pages.renderer, secureCookies: dashboard.secureCookies, limits: limits,
        lostKeyLimits: lostKeyLimits, logger: dashboard.logger
    ).register(on: router)
    var accounts = AccountRoutes(
        licensing: licensing, admin: admin, checkout: checkout, renderer: dashboard.pages.renderer, secureCookies: dashboard.secureCookies, limits: limits,
        lostKeyLimits: lostKeyLimits, logger: dashboard.logger
    )
    accounts.releases = releases
    accounts.register(on: router)
    // Reminder mails' one-click opt-out (the token in the link names the license).
    UnsubscribeRoutes(reminders: admin.reminders, renderer: dashboard.pages.renderer, logger: dashboard.logger).register(on: router)
    router.addMethodNotAllowedAnswers()
    return built
}

/// Does one thing when graceful shutdown reaches it: closing a resource the services listed
/// after it use (services shut down in reverse order, so it runs once they have stopped).
struct AtShutdown: Service {
    let action: @Sendable () async throws -> Void

    func run() async throws {
        try? await gracefulShutdown()
        try await action()
    }
}
