import Foundation

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
