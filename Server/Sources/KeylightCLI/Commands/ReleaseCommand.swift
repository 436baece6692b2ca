import ArgumentParser
import Foundation

/// `keylight release`: a product's builds over the admin API, from a build machine or CI.
struct ReleaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release",
        abstract: "Publish a product's builds (Sparkle updates) over the admin API.",
        subcommands: [PublishReleaseCommand.self]
    )
}

/// `keylight release publish`: what a build machine runs after `sign_update`, so a release
/// reaches the feed with the file, versions and date the app itself carries.
struct PublishReleaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Create a release, upload its file and publish it.",
        discussion: """
        Three admin API calls: a draft (POST …/releases), its file streamed from disk (PUT …/artifacts, \
        checked against the length and SHA-256 measured while sending), then POST …/publish, which \
        --draft skips. The token needs releases:publish. Prefer KEYLIGHT_ADMIN_TOKEN to --token: other \
        users of the machine can read a command line.

        released_at must equal the app's KeylightReleaseDate: the server offers the build to licenses \
        whose updates last until released_at, and the installed app checks its own date against the \
        same license. --app reads that date, and the versions, from the bundle's Info.plist.

        Exit status 2 for a problem with the arguments (nothing was sent), 1 when a request failed.
        """
    )

    @Option(help: "The server's base URL, such as https://licenses.example.com.")
    var server: String

    @Option(help: "An admin API token with releases:publish (default: KEYLIGHT_ADMIN_TOKEN).")
    var token: String?

    @Option(help: "Tenant id.")
    var tenant: String

    @Option(help: "Product id.")
    var product: String

    @Option(help: "The file buyers download: the .zip, .dmg or .pkg Sparkle installs.")
    var file: String

    @Option(help: "The build, CFBundleVersion (sparkle:version); with --app, the app's by default.")
    var version: String?

    @Option(help: "The version people read, CFBundleShortVersionString; with --app, the app's by default.")
    var shortVersion: String?

    @Option(help: "Release notes in Markdown: a file, or - for standard input.")
    var notes: String?

    @Option(help: "The channel, such as beta (default: stable).")
    var channel: String?

    @Option(help: "The file's EdDSA signature from Sparkle's sign_update (default: the server signs with the product's key).")
    var signature: String?

    @Option(help: "The release date in Unix seconds: the app's KeylightReleaseDate (default: now, on the server).")
    var releasedAt: Int64?

    @Option(help: "The built .app: released_at from its KeylightReleaseDate, and the versions unless given.")
    var app: String?

    @Option(help: "The platform: darwin, windows or linux.")
    var platform = "darwin"

    @Option(help: "The architecture, such as universal, arm64 or x86_64.")
    var arch = "universal"

    @Option(help: "The oldest system the build runs on, such as 13.0.")
    var minSystemVersion: String?

    @Flag(help: "A critical update for every install.")
    var critical = false

    @Option(help: "A critical update for installs below this build.")
    var criticalBelow: String?

    @Option(help: "A phased rollout: seconds between Sparkle's rollout groups (60 to 2592000).")
    var phasedRolloutSeconds: Int64?

    @Flag(help: "Upload the file but leave the release a draft.")
    var draft = false

    @Flag(help: "Print the release as JSON on standard output.")
    var json = false

    func validate() throws {
        if releasedAt != nil, app != nil {
            throw ValidationError("--released-at and --app are exclusive: --app takes released_at from the app's KeylightReleaseDate.")
        }
    }

    func run() async throws {
        let plan = try reportingInputFailures { try makePlan() }
        defer { plan.file.closeDescriptor() }
        if let releasedAt = plan.create.released_at {
            Standard.error(ReleasedAtNote.text(seconds: releasedAt, source: plan.releasedAtSource))
        }
        try await ReleasePublisher(plan: plan).run()
    }

    /// Everything checked before the first request: a mistake here leaves nothing on the server.
    func makePlan() throws -> PublishPlan {
        let base = try ReleaseRoutes.base(server)
        let adminToken = try Self.adminToken(self.token ?? ProcessInfo.processInfo.environment["KEYLIGHT_ADMIN_TOKEN"])
        let bundle = try app.map(AppBundleInfo.read(app:))
        if let app, bundle?.releaseDateIsNumber == true {
            Standard.error("keylight: warning: KeylightReleaseDate in \(app) is a number; the SDK reads a date or text such as 2026-11-22, so the app ignores it.")
        }
        let build = try Self.pick(self.version, bundle?.version, option: "--version", key: "CFBundleVersion")
        let shown = try Self.pick(self.shortVersion, bundle?.shortVersion, option: "--short-version", key: "CFBundleShortVersionString")
        let notesText = try notes.map(Self.readNotes)
        let urlSafeSignature = try signature.map(SparkleSignatureText.urlSafe)
        let baseName = URL(fileURLWithPath: self.file).lastPathComponent
        let fileName = ArtifactFileName.forUpload(baseName)
        if fileName != baseName {
            Standard.error("keylight: the download is named \(fileName ?? "by the server, from the file's type"): a name keeps to letters, digits, dots, dashes and underscores, and ends in the file's extension.")
        }
        let source: ReleasedAtSource = if releasedAt != nil { .option } else if let app { .app(app) } else { .server }
        // Last, so that nothing after it throws and leaves the descriptor open.
        let upload = try UploadFile.opening(self.file)
        return PublishPlan(
            routes: ReleaseRoutes(base: base, tenant: tenant, product: product),
            token: adminToken,
            create: CreateReleaseBody(
                version: build, short_version: shown, channel: channel, released_at: releasedAt ?? bundle?.releasedAt,
                min_system_version: minSystemVersion, notes_markdown: notesText, critical: critical ? true : nil,
                critical_below: criticalBelow, phased_rollout_interval_seconds: phasedRolloutSeconds
            ),
            releasedAtSource: source,
            file: upload,
            query: ArtifactQuery.string(platform: platform, arch: arch, signature: urlSafeSignature, fileName: fileName),
            publish: !draft,
            json: json
        )
    }

    /// The option's value, else the app's; a given value that differs from the app's is allowed
    /// (a rebuilt bundle) but warned about, since Sparkle compares the app's own CFBundleVersion.
    static func pick(_ given: String?, _ fromApp: String?, option: String, key: String) throws -> String {
        if let given, let fromApp, given != fromApp {
            Standard.error("keylight: warning: \(option) \(given) differs from the app's \(key) \(fromApp).")
        }
        guard let value = given ?? fromApp, !value.isEmpty else {
            throw InputFailure("give \(option) (the app's \(key)), or --app to read it from the bundle")
        }
        return value
    }

    /// The token, checked for what a header can carry; never echoed, whatever is wrong with it.
    static func adminToken(_ given: String?) throws -> String {
        guard let token = given?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw InputFailure("give --token, or set KEYLIGHT_ADMIN_TOKEN")
        }
        guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw InputFailure("the admin token has characters an HTTP header cannot carry")
        }
        return token
    }

    static func readNotes(_ path: String) throws -> String {
        let data = try readInput(path)
        // The server's limit, checked here so an oversized file fails before a draft exists.
        guard data.count <= 32 * 1_024 else { throw InputFailure("\(path) is \(data.count) bytes: release notes are at most 32 KiB") }
        guard let text = String(data: data, encoding: .utf8) else { throw InputFailure("\(path) is not UTF-8 text") }
        return text
    }
}
