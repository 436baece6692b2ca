import Foundation
import KeylightTestSupport
import Testing

/// A license's life after the sale in headless Chromium against aiosmtpd (issue 49): the
/// dashboard's edit form (key type, limit below the devices in use, add-on, metadata, note) and
/// renewal, then the buyer's account from the app's upgrade link (prices, freeing a device) and
/// from a mailed sign-in link that works once (Tests/Browser/license_life_flow.py).
@Suite(.timeLimit(.minutes(4))) struct LicenseLifeBrowserTests {
    @Test(.enabled(if: PrerequisiteGate.enabled(DashboardCommandTests.browserTestsEnabled && SMTPServerProcess.available),
                   "needs Chromium + selenium and aiosmtpd: run through .ci/run or set KEYLIGHT_BROWSER_TESTS=1"))
    func licenseEditsAndTheBuyersAccountInAHeadlessBrowser() async throws {
        let work = try temporaryDirectory()
        let database = work.appendingPathComponent("life.sqlite").path
        let password = "browser test password"
        let user = try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com"], stdin: Data((password + "\n").utf8))
        #expect(user.status == 0)
        let folder = work.appendingPathComponent("mail")
        let smtp = try await SMTPServerProcess(folder: folder)
        defer { Task { await smtp.stop() } }
        // The mailed sign-in link names the public URL; the flow opens its path on the server's real port.
        let publicURL = "http://licenses.acme.example"
        let server = try await ServerProcess(
            database: database, environment: ["KEYLIGHT_ADMIN_TOKEN": "life-test-token", "KEYLIGHT_SMTP_PASSWORD": SMTPServerProcess.password],
            arguments: ["--smtp-url", "smtp://\(SMTPServerProcess.user)@localhost:\(smtp.port)?tls=none", "--mail-from", "Acme Sales <sales@acme.example>",
                        "--mail-retry-seconds", "1", "--public-url", publicURL]
        )
        var environment = [
            "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_ADMIN_TOKEN": "life-test-token",
            "KEYLIGHT_EMAIL": "dev@example.com", "KEYLIGHT_PASSWORD": password, "KEYLIGHT_MAIL_FOLDER": folder.path, "KEYLIGHT_PUBLIC_URL": publicURL,
        ]
        if let shots = ProcessInfo.processInfo.environment["KEYLIGHT_SCREENSHOTS"] { environment["KEYLIGHT_SCREENSHOTS"] = shots }
        let (status, text) = try await CLI.python("Tests/Browser/license_life_flow.py", environment: environment, limit: .seconds(200))
        _ = await server.terminate()
        #expect(status == 0, "\(text)")
        #expect(text.contains("ok: the license edit form moved the license and lowered its limit"), "\(text)")
        #expect(text.contains("ok: the edit card warns that the license is over its limit"), "\(text)")
        #expect(text.contains("ok: the renewal moved the expiry"), "\(text)")
        #expect(text.contains("ok: saving the form untouched changes nothing"), "\(text)")
        #expect(text.contains("ok: the upgrade link opened the account without the key in the URL"), "\(text)")
        #expect(text.contains("ok: the upgrade and renewal prices appear (Paddle prices, as text)"), "\(text)")
        #expect(text.contains("ok: a device freed from the account page"), "\(text)")
        #expect(text.contains("ok: the mailed link signed in once"), "\(text)")
    }
}
