import Foundation
import KeylightTestSupport

/// A headless-browser flow against a real server that mails through aiosmtpd: a dashboard user
/// made with the CLI, the SMTP server, `keylight serve` with mail and a public URL, then the
/// Python script with everything it needs in its environment. Mailed links name the public URL;
/// the flows open their paths on the server's real port.
enum MailingBrowserFlow {
    static let publicURL = "http://licenses.acme.example"

    static func run(
        script: String, database name: String, email: String, token: String, from: String, limit: Duration
    ) async throws -> (status: Int32, output: String) {
        let work = try temporaryDirectory()
        let database = work.appendingPathComponent(name).path
        let password = "browser test password"
        let user = try await CLI.run(["admin", "create-user", "--db", database, "--email", email], stdin: Data((password + "\n").utf8))
        guard user.status == 0 else { return (user.status, "create-user: " + user.stderr) }
        let folder = work.appendingPathComponent("mail")
        let smtp = try await SMTPServerProcess(folder: folder)
        defer { Task { await smtp.stop() } }
        let server = try await ServerProcess(
            database: database, environment: ["KEYLIGHT_ADMIN_TOKEN": token, "KEYLIGHT_SMTP_PASSWORD": SMTPServerProcess.password],
            arguments: ["--smtp-url", "smtp://\(SMTPServerProcess.user)@localhost:\(smtp.port)?tls=none", "--mail-from", from,
                        "--mail-retry-seconds", "1", "--public-url", publicURL]
        )
        var environment = [
            "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_ADMIN_TOKEN": token,
            "KEYLIGHT_EMAIL": email, "KEYLIGHT_PASSWORD": password, "KEYLIGHT_MAIL_FOLDER": folder.path, "KEYLIGHT_PUBLIC_URL": publicURL,
        ]
        if let shots = ProcessInfo.processInfo.environment["KEYLIGHT_SCREENSHOTS"] { environment["KEYLIGHT_SCREENSHOTS"] = shots }
        do {
            let run = try await CLI.python(script, environment: environment, limit: limit)
            _ = await server.terminate()
            return run
        } catch {
            _ = await server.terminate()
            throw error
        }
    }
}
