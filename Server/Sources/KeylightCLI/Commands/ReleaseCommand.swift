import ArgumentParser
import Foundation
import Keylight
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

/// What `release publish` sends, decided before any request.
struct PublishPlan {
    var routes: ReleaseRoutes
    var token: String
    var create: CreateReleaseBody
    var releasedAtSource: ReleasedAtSource
    var file: UploadFile
    /// The artifact upload's query, escaped.
    var query: String
    var publish: Bool
    var json: Bool
}

/// `POST …/releases`; absent fields are left out (the server's defaults apply).
struct CreateReleaseBody: Encodable, Equatable {
    var version: String
    var short_version: String
    var channel: String?
    var released_at: Int64?
    var min_system_version: String?
    var notes_markdown: String?
    var critical: Bool?
    var critical_below: String?
    var phased_rollout_interval_seconds: Int64?
}

/// Where released_at came from, for the note that says so.
enum ReleasedAtSource: Equatable {
    case option
    case app(String)
    case server
}

enum ReleasedAtNote {
    static func text(seconds: Int64, source: ReleasedAtSource) -> String {
        let date = ISO8601DateFormatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)), timeZone: .gmt, formatOptions: [.withInternetDateTime])
        let why = "it must equal the app's KeylightReleaseDate: the server offers this build to licenses whose updates last until released_at, "
            + "and the installed app checks its own KeylightReleaseDate against the same license, so a difference lets a buyer install a build that then runs limited."
        return switch source {
        case .option: "keylight: released_at \(seconds) (\(date)), from --released-at; \(why)"
        case .app(let path): "keylight: released_at \(seconds) (\(date)), the KeylightReleaseDate of \(path); \(why)"
        case .server: "keylight: released_at \(seconds) (\(date)), the server's clock, as neither --released-at nor --app was given; \(why) Give --app to take it from the build."
        }
    }
}

/// The admin API's release URLs under the server's base URL.
struct ReleaseRoutes: Equatable {
    /// The server's URL, without a trailing slash (it may have a path, behind a proxy).
    var base: String
    var tenant: String
    var product: String

    var releases: String {
        "\(base)/admin/v1/tenants/\(PercentEncoding.component(tenant))/products/\(PercentEncoding.component(product))/releases"
    }

    func artifacts(release: String, query: String) -> String {
        "\(releases)/\(PercentEncoding.component(release))/artifacts?\(query)"
    }

    func action(_ action: String, release: String) -> String {
        "\(releases)/\(PercentEncoding.component(release))/\(action)"
    }

    /// `--server` checked: http(s) with a host, and nothing a path could not follow.
    static func base(_ server: String) throws -> String {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil else {
            throw InputFailure("--server must be an http(s) URL such as https://licenses.example.com, got \(server)")
        }
        if scheme == "http", !["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) {
            Standard.error("keylight: warning: --server is plain http: the admin token crosses the network unencrypted.")
        }
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

/// Percent-encoding of URL parts: everything but RFC 3986's unreserved characters, byte by byte,
/// so `+`, `&`, `=`, `/` and non-ASCII names reach the server as they were.
enum PercentEncoding {
    private static let hexDigits = Array("0123456789ABCDEF".unicodeScalars)

    static func component(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E:
                out.append(Unicode.Scalar(byte))
            default:
                out.append("%")
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(out)
    }
}

/// The artifact upload's query: `platform=…&arch=…[&signature=…][&filename=…]`.
enum ArtifactQuery {
    static func string(platform: String, arch: String, signature: String?, fileName: String?) -> String {
        var pairs = [("platform", platform), ("arch", arch)]
        if let signature { pairs.append(("signature", signature)) }
        if let fileName { pairs.append(("filename", fileName)) }
        return pairs.map { "\($0.0)=\(PercentEncoding.component($0.1))" }.joined(separator: "&")
    }
}

/// The download's name as the server takes it (letters, digits, `.`, `-`, `_`, at most 128, ending
/// in a known extension): checked here because a refused name would fail the upload after the
/// draft exists. Other characters become `-`; nil leaves the naming to the server.
enum ArtifactFileName {
    static let extensions = ["zip", "dmg", "pkg", "tar.gz", "tgz", "tar.xz", "txz", "tar.bz2", "tbz", "msi", "exe", "appimage", "deb"]

    static func forUpload(_ baseName: String) -> String? {
        var name = String.UnicodeScalarView()
        var replacing = false
        for scalar in baseName.unicodeScalars {
            switch scalar.value {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F:
                name.append(scalar)
                replacing = false
            default:
                // A run of refused characters becomes one dash: "My App (2).zip" is "My-App-2-.zip".
                if !replacing { name.append("-") }
                replacing = true
            }
        }
        let kept = String(String(name).drop { $0 == "." })
        let lower = kept.lowercased()
        guard !kept.isEmpty, kept.utf8.count <= 128, extensions.contains(where: { lower.hasSuffix("." + $0) }) else { return nil }
        return kept
    }
}

/// Sparkle's signature of the file for the upload's query.
enum SparkleSignatureText {
    /// `sign_update` prints standard base64 (`+`, `/`, `=` padding), which a query would garble:
    /// answers the URL-safe form without padding. Takes sign_update's whole output line too
    /// (`sparkle:edSignature="…" length="…"`), and refuses anything but 64 bytes.
    static func urlSafe(_ given: String) throws -> String {
        var text = given.trimmingCharacters(in: .whitespacesAndNewlines)
        if let start = text.range(of: "edSignature=\"") {
            let rest = text[start.upperBound...]
            text = String(rest.prefix { $0 != "\"" })
        }
        let urlSafe = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        var standard = urlSafe.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        guard urlSafe.utf8.count <= 128, Data(base64Encoded: standard)?.count == 64 else {
            throw InputFailure("--signature is not an EdDSA signature: sign_update prints 88 characters of base64 (64 bytes)")
        }
        return urlSafe
    }
}

/// What `--app` reads from the bundle's Info.plist.
struct AppBundleInfo: Equatable {
    var releasedAt: Int64
    var version: String?
    var shortVersion: String?
    /// The SDK reads no number there (only a date or text), so the app would apply no release date.
    var releaseDateIsNumber: Bool

    static func read(app path: String) throws -> AppBundleInfo {
        let plistPath = URL(fileURLWithPath: path).appendingPathComponent("Contents/Info.plist").path
        guard let data = FileManager.default.contents(atPath: plistPath) else {
            throw InputFailure("\(plistPath): cannot be read (--app is the built .app bundle)")
        }
        return try parse(data, source: plistPath)
    }

    /// An XML or binary property list.
    static func parse(_ data: Data, source: String) throws -> AppBundleInfo {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw InputFailure("\(source) is not a property list")
        }
        guard let plist = object as? [String: Any] else { throw InputFailure("\(source) is not a dictionary") }
        guard let value = plist["KeylightReleaseDate"] else {
            throw InputFailure("\(source) has no KeylightReleaseDate: add it (such as 2026-11-22) so the app and the server agree on the build's date, or give --released-at")
        }
        let date = try ReleaseDateValue.unixSeconds(value, name: "KeylightReleaseDate in \(source)")
        return AppBundleInfo(
            releasedAt: date.seconds, version: plist["CFBundleVersion"] as? String,
            shortVersion: plist["CFBundleShortVersionString"] as? String, releaseDateIsNumber: date.isNumber
        )
    }
}

/// A `KeylightReleaseDate` value in whole Unix seconds.
enum ReleaseDateValue {
    /// The server's range for released_at, widened to 2100 (it also refuses dates over a year ahead).
    static let plausible: ClosedRange<Int64> = 946_684_800...4_102_444_800

    /// A plist date; text as the SDK reads it (`2026-11-22`, UTC midnight, or ISO 8601 with a
    /// time), so released_at is the very second the app compares; or a number of Unix seconds.
    static func unixSeconds(_ value: Any, name: String) throws -> (seconds: Int64, isNumber: Bool) {
        if let date = value as? Date { return (Int64(date.timeIntervalSince1970.rounded(.down)), false) }
        if let text = value as? String {
            guard let date = Configuration.releaseDate(text) else {
                throw InputFailure("\(name) is \"\(text)\", not a date such as 2026-11-22 or 2026-11-22T09:30:00Z")
            }
            return (Int64(date.timeIntervalSince1970.rounded(.down)), false)
        }
        guard let seconds = number(value) else {
            throw InputFailure("\(name) is neither a date, nor text such as 2026-11-22, nor a number of Unix seconds")
        }
        guard seconds.isFinite, plausible.contains(Int64(exactly: seconds.rounded(.down)) ?? -1) else {
            let hint = seconds.isFinite && plausible.contains(Int64(exactly: (seconds / 1_000).rounded(.down)) ?? -1) ? " (milliseconds? it is Unix seconds)" : ""
            throw InputFailure("\(name) is \(seconds), not Unix seconds between 2000 and 2100\(hint)")
        }
        return (Int64(seconds.rounded(.down)), true)
    }

    /// A plist number, whichever way the platform's Foundation hands it over.
    private static func number(_ value: Any) -> Double? {
        if let whole = value as? Int64 { return Double(whole) }
        if let whole = value as? Int { return Double(whole) }
        if let real = value as? Double { return real }
        return (value as? NSNumber)?.doubleValue
    }
}

/// The file to upload, opened before any request so that a missing, unreadable or empty file
/// fails first; read by position (`pread`) while it streams.
struct UploadFile {
    let path: String
    let descriptor: Int32
    let length: Int64

    static func opening(_ path: String) throws -> UploadFile {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw InputFailure("\(path): no such file") }
        guard !isDirectory.boolValue else { throw InputFailure("\(path) is a folder: give the archive buyers download (.zip, .dmg, .pkg)") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw InputFailure("\(path): cannot be read: \(String(cString: strerror(errno)))") }
        let length = Int64(lseek(descriptor, 0, SEEK_END))
        guard length > 0 else {
            close(descriptor)
            throw InputFailure(length == 0 ? "\(path) is empty" : "\(path): cannot be read to its end")
        }
        return UploadFile(path: path, descriptor: descriptor, length: length)
    }

    func closeDescriptor() {
        close(descriptor)
    }
}
