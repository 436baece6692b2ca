import Foundation

/// Where mail goes: `smtp://USER:PASS@HOST:PORT?tls=none|starttls|tls`.
public struct SMTPSettings: Sendable, Equatable, CustomStringConvertible {
    public enum Security: String, Sendable, Equatable {
        /// Plain SMTP (a relay on this machine or network).
        case none
        /// Plain, then upgraded with STARTTLS before anything else is said (port 587).
        case starttls
        /// TLS from the first byte (port 465).
        case tls
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    public var password: String?
    /// Certificates (PEM) to trust instead of the system's, for a relay with a private CA.
    public var caFile: String?
    /// The name this server gives in EHLO.
    public var heloName = "localhost"
    /// The longest any one step may take (connecting, each reply, each write).
    public var stepTimeout: Duration = .seconds(30)

    /// Parses the URL. A password in the URL may be replaced by `password` (read from a file or
    /// the environment by the caller), so it need not appear on a command line.
    public init(url text: String, password override: String? = nil) throws(SMTPError) {
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "smtp",
              let host = components.host, !host.isEmpty else {
            throw SMTPError.unsupported("--smtp-url must be smtp://[USER:PASS@]HOST[:PORT]?tls=none|starttls|tls")
        }
        let tls = components.queryItems?.first { $0.name == "tls" }?.value ?? "starttls"
        guard let security = Security(rawValue: tls) else { throw SMTPError.unsupported("--smtp-url: tls must be none, starttls or tls") }
        self.host = host
        self.security = security
        self.port = components.port ?? (security == .tls ? 465 : 587)
        guard (1...65_535).contains(port) else { throw SMTPError.unsupported("--smtp-url: the port must be 1-65535") }
        self.username = components.user.flatMap { $0.removingPercentEncoding }
        self.password = override ?? components.password.flatMap { $0.removingPercentEncoding }
        if username != nil, password == nil { throw SMTPError.unsupported("--smtp-url names a user but no password (in the URL, --smtp-password-file or KEYLIGHT_SMTP_PASSWORD)") }
        if let unknown = components.queryItems?.first(where: { $0.name != "tls" }) {
            throw SMTPError.unsupported("--smtp-url: unknown parameter \(unknown.name)")
        }
    }

    /// For logs: never the password.
    public var description: String {
        "smtp://\(username.map { "\($0)@" } ?? "")\(host):\(port)?tls=\(security.rawValue)"
    }

    /// A relay on this machine: the one place a password may go without TLS.
    var isLoopback: Bool { ["localhost", "127.0.0.1", "::1"].contains(host.lowercased()) || host.hasPrefix("127.") }
}
