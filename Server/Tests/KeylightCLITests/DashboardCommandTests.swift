import Foundation
import KeylightTestSupport
import Testing

/// `keylight admin create-user` / `list-users`, and the dashboard in a real browser.
@Suite(.timeLimit(.minutes(6))) struct DashboardCommandTests {
    @Test func createUserHashesThePasswordAndRefusesBadInput() async throws {
        let database = try temporaryDirectory().appendingPathComponent("users.sqlite").path
        let created = try await CLI.run(["admin", "create-user", "--db", database, "--email", "Dev@Example.com"], stdin: Data("a long enough password\n".utf8))
        #expect(created.status == 0 && created.stdout.contains("created dashboard user dev@example.com"), "\(created.stderr)")
        let again = try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com"], stdin: Data("another long password\n".utf8))
        #expect(again.status == 2 && again.stderr.contains("already exists"))
        let updated = try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com", "--update"], stdin: Data("another long password\n".utf8))
        #expect(updated.status == 0 && updated.stdout.contains("password set for dev@example.com"))
        let short = try await CLI.run(["admin", "create-user", "--db", database, "--email", "x@example.com"], stdin: Data("short\n".utf8))
        #expect(short.status == 2 && short.stderr.contains("at least 12"))
        let noPassword = try await CLI.run(["admin", "create-user", "--db", database, "--email", "x@example.com"], stdin: Data())
        #expect(noPassword.status == 2 && noPassword.stderr.contains("no password"))
        let badEmail = try await CLI.run(["admin", "create-user", "--db", database, "--email", "not-an-email"], stdin: Data("a long enough password\n".utf8))
        #expect(badEmail.status == 2)
        let list = try await CLI.run(["admin", "list-users", "--db", database])
        #expect(list.status == 0 && list.stdout.split(separator: "\n").count == 1 && list.stdout.hasPrefix("dev@example.com"))
        // The password itself is nowhere in the database file.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: database))
        #expect(bytes.range(of: Data("another long password".utf8)) == nil && bytes.range(of: Data("$2b$12$".utf8)) != nil)
    }

    /// Roles from the server's machine: a new user owns every tenant unless told otherwise,
    /// `set-role` changes a role (never the last owner's), `reset-2fa` is for a lost authenticator.
    @Test func rolesAndTheSecondFactorFromTheCommandLine() async throws {
        let database = try temporaryDirectory().appendingPathComponent("roles.sqlite").path
        let password = Data("a long enough password\n".utf8)
        #expect(try await CLI.run(["admin", "create-user", "--db", database, "--email", "owner@example.com"], stdin: password).status == 0)
        let noTenant = try await CLI.run(["admin", "create-user", "--db", database, "--email", "s@example.com", "--tenant", "acme", "--role", "support"], stdin: password)
        #expect(noTenant.status == 2 && noTenant.stderr.contains("No tenant acme"), "\(noTenant.stderr)")
        let badRole = try await CLI.run(["admin", "create-user", "--db", database, "--email", "s@example.com", "--role", "god"], stdin: password)
        #expect(badRole.status == 2 && badRole.stderr.contains("read_only"))
        #expect(try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com", "--role", "developer"], stdin: password).status == 0)
        var list = try await CLI.run(["admin", "list-users", "--db", database])
        #expect(list.stdout.contains("owner@example.com\towner@every-tenant\t2fa off"), "\(list.stdout)")
        #expect(list.stdout.contains("dev@example.com\tdeveloper@every-tenant"), "\(list.stdout)")
        // The last owner of every tenant can neither step down nor be deleted.
        let demote = try await CLI.run(["admin", "set-role", "--db", database, "--email", "owner@example.com", "--role", "admin"])
        #expect(demote.status == 2 && demote.stderr.contains("last owner"), "\(demote.stderr)")
        let delete = try await CLI.run(["admin", "delete-user", "--db", database, "--email", "owner@example.com"])
        #expect(delete.status == 2 && delete.stderr.contains("last owner"), "\(delete.stderr)")
        #expect(try await CLI.run(["admin", "set-role", "--db", database, "--email", "dev@example.com", "--role", "owner"]).status == 0)
        #expect(try await CLI.run(["admin", "set-role", "--db", database, "--email", "owner@example.com", "--remove"]).status == 0)
        list = try await CLI.run(["admin", "list-users", "--db", database])
        #expect(list.stdout.contains("owner@example.com\tno-role") && list.stdout.contains("dev@example.com\towner@every-tenant"), "\(list.stdout)")
        let reset = try await CLI.run(["admin", "reset-2fa", "--db", database, "--email", "dev@example.com"])
        #expect(reset.status == 0 && reset.stdout.contains("second factor reset for dev@example.com"), "\(reset.stderr)")
        let nobody = try await CLI.run(["admin", "reset-2fa", "--db", database, "--email", "nobody@example.com"])
        #expect(nobody.status == 2 && nobody.stderr.contains("No dashboard user"))
    }

    /// Set by `.ci/run`, which installs Chromium, chromedriver and selenium.
    static var browserTestsEnabled: Bool { ProcessInfo.processInfo.environment["KEYLIGHT_BROWSER_TESTS"] == "1" }

    @Test(.enabled(if: PrerequisiteGate.enabled(browserTestsEnabled), "needs Chromium + selenium: run through .ci/run or set KEYLIGHT_BROWSER_TESTS=1"))
    func theDashboardInAHeadlessBrowser() async throws {
        let database = try temporaryDirectory().appendingPathComponent("browser.sqlite").path
        let password = "browser test password"
        let user = try await CLI.run(["admin", "create-user", "--db", database, "--email", "dev@example.com"], stdin: Data((password + "\n").utf8))
        #expect(user.status == 0)
        let server = try await ServerProcess(database: database, environment: ["KEYLIGHT_ADMIN_TOKEN": "browser-test-token"])
        // A browser that hangs must fail the test, not stall the run.
        let (status, text) = try await CLI.python("Tests/Browser/dashboard_flow.py", environment: [
            "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_EMAIL": "dev@example.com", "KEYLIGHT_PASSWORD": password,
        ], limit: .seconds(240))
        _ = await server.terminate()
        #expect(status == 0, "\(text)")
        #expect(text.contains("ok: the audit log shows the revocation by this user"), "\(text)")
    }
}
