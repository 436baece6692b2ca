import Foundation
import KeylightTestSupport
import Testing

/// The Insights page in headless Chromium over 30 days of history (Tests/Browser/insights_flow.py):
/// devices by version and OS, the stacked series, the funnel, quiet licenses and the CSV export.
@Suite(.timeLimit(.minutes(6))) struct InsightsBrowserTests {
    @Test(.enabled(if: PrerequisiteGate.enabled(DashboardCommandTests.browserTestsEnabled), "needs Chromium + selenium: run through .ci/run or set KEYLIGHT_BROWSER_TESTS=1"))
    func insightsInAHeadlessBrowser() async throws {
        let work = try temporaryDirectory()
        let database = work.appendingPathComponent("insights.sqlite").path
        let password = "browser test password"
        let user = try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com"], stdin: Data((password + "\n").utf8))
        #expect(user.status == 0)
        let server = try await ServerProcess(database: database, environment: ["KEYLIGHT_ADMIN_TOKEN": "insights-test-token"])
        var environment = [
            "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_ADMIN_TOKEN": "insights-test-token", "KEYLIGHT_DB": database,
            "KEYLIGHT_EMAIL": "dev@example.com", "KEYLIGHT_PASSWORD": password, "KEYLIGHT_WORKDIR": work.path,
        ]
        if let shots = ProcessInfo.processInfo.environment["KEYLIGHT_SCREENSHOTS"] { environment["KEYLIGHT_SCREENSHOTS"] = shots }
        let (status, text) = try await CLI.python("Tests/Browser/insights_flow.py", environment: environment, limit: .seconds(200))
        _ = await server.terminate()
        #expect(status == 0, "\(text)")
        #expect(text.contains("ok: each device counted once over the 30 days"), "\(text)")
        #expect(text.contains("ok: the funnel counts the cohorts' installs and trials"), "\(text)")
        #expect(text.contains("ok: the CSV export has the page's rows"), "\(text)")
        #expect(text.contains("insights flow passed"), "\(text)")
    }
}
