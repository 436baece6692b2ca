import Foundation
import KeylightTestSupport
import Testing

/// A license's life after the sale in headless Chromium against aiosmtpd (issue 49): the
/// dashboard's edit form (key type, limit below the devices in use, add-on, metadata, note) and
/// renewal, then the buyer's account from the app's upgrade link (prices, freeing a device) and
/// from a mailed sign-in link that works once (Tests/Browser/license_life_flow.py).
@Suite(.timeLimit(.minutes(6))) struct LicenseLifeBrowserTests {
    @Test(.enabled(if: PrerequisiteGate.enabled(DashboardCommandTests.browserTestsEnabled && SMTPServerProcess.available),
                   "needs Chromium + selenium and aiosmtpd: run through .ci/run or set KEYLIGHT_BROWSER_TESTS=1"))
    func licenseEditsAndTheBuyersAccountInAHeadlessBrowser() async throws {
        let (status, text) = try await MailingBrowserFlow.run(
            script: "Tests/Browser/license_life_flow.py", database: "life.sqlite", email: "dev@example.com", token: "life-test-token",
            from: "Acme Sales <sales@acme.example>", limit: .seconds(200)
        )
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
