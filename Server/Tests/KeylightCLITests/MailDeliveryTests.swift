import AsyncHTTPClient
import Foundation
import KeylightCore
@testable import KeylightServer
import KeylightTestSupport
import Logging
import SQLKit
import Testing

/// A buyer's key by mail, through `keylight serve` and a real SMTP server (aiosmtpd).
@Suite(.serialized, .timeLimit(.minutes(6)), .enabled(if: PrerequisiteGate.enabled(SMTPServerProcess.available), "needs python3 with aiosmtpd and cryptography (.ci/run installs them)"))
struct MailDeliveryTests {
    static let environment = ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 4, count: 32))]
    static let auth = [("Authorization", "Bearer t")]

    static func mailArguments(_ smtp: SMTPServerProcess?, port: Int? = nil, tls: String = "starttls", retrySeconds: Int = 1) -> [String] {
        var arguments = ["--smtp-url", "smtp://\(SMTPServerProcess.user)@localhost:\(smtp?.port ?? port ?? 1)?tls=\(tls)", "--mail-from", "Acme Sales <sales@acme.example>",
                         "--public-url", "https://licenses.acme.example", "--mail-retry-seconds", "\(retrySeconds)", "--rate-limit-address", "0"]
        if let ca = smtp?.caFile { arguments += ["--smtp-ca-file", ca] }
        return arguments
    }

    static var passwordEnvironment: [String: String] { environment.merging(["KEYLIGHT_SMTP_PASSWORD": SMTPServerProcess.password]) { $1 } }

    static func mint(_ server: ServerProcess, email: String, sendEmail: Bool = true) async throws -> (status: Int, body: [String: Any]) {
        try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: auth,
                                 json: #"{"key_type_id":"pro","customer_email":"\#(email)","send_email":\#(sendEmail)}"#, using: .shared)
    }

    @Test func theKeyArrivesByMailAndActivatesAndIsNeverStoredInClear() async throws {
        let directory = try temporaryDirectory()
        let smtp = try await SMTPServerProcess(folder: directory.appendingPathComponent("mail"), starttls: true)
        defer { Task { await smtp.stop() } }
        let database = directory.appendingPathComponent("k.sqlite").path
        let server = try await ServerProcess(database: database, environment: Self.passwordEnvironment, arguments: Self.mailArguments(smtp))
        let (sdkKey, _, _) = try await server.seedLicense(token: "t")
        let minted = try await Self.mint(server, email: "buyer@example.com")
        #expect(minted.status == 201)
        let mintedKey = try #require(minted.body["license_key"] as? String)
        let received = try await smtp.waitForMessages(1)
        try #require(received.count == 1)
        let envelope = try smtp.envelope(received[0])
        #expect(envelope["tls"] as? Bool == true && envelope["authenticated"] as? Bool == true)
        let mail = try await SMTPServerProcess.read(received[0])
        #expect(mail["from_address"] as? String == "sales@acme.example")
        #expect(mail["subject"] as? String == "Your App license key")
        #expect(mail["parts"] as? [String] == ["text/plain", "text/html"])
        let text = try #require(mail["text"] as? String)
        #expect(text.contains("https://licenses.acme.example/portal/acme/app"))
        // The buyer's view: the key is read out of the plain-text part and activates.
        let key = try #require(text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("ACME-") }.map(String.init))
        #expect(key == mintedKey)
        #expect((mail["html"] as? String)?.contains(key) == true)
        let activation = try await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                  json: #"{"license_key":"\#(key)","instance_name":"Mac","machine_hash":"m1"}"#, using: .shared)
        #expect(activation.status == 200)

        // Resend to a corrected address: saved, and the same key mailed there.
        let licenseId = try #require(minted.body["id"] as? String)
        let resend = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)/email", headers: Self.auth,
                                              json: #"{"customer_email":"Buyer.New@Example.com"}"#, using: .shared)
        #expect(resend.status == 202 && resend.body["to"] as? String == "buyer.new@example.com")
        let resent = try await smtp.waitForMessages(2)
        try #require(resent.count == 2)
        #expect(try smtp.envelope(resent[1])["rcpt_tos"] as? [String] == ["buyer.new@example.com"])
        let again = try await SMTPServerProcess.read(resent[1])
        #expect((again["text"] as? String)?.contains(key) == true)
        #expect(again["message_id"] as? String != mail["message_id"] as? String)
        let detail = try await server.request(.GET, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)", headers: Self.auth, using: .shared)
        #expect(detail.body["customer_email"] as? String == "buyer.new@example.com")
        // After a remint, a resend mails the new key, not the old one.
        let reminted = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)/remint", headers: Self.auth, using: .shared)
        let newKey = try #require(reminted.body["license_key"] as? String)
        #expect(try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)/email", headers: Self.auth, using: .shared).status == 202)
        let third = try await smtp.waitForMessages(3)
        try #require(third.count == 3)
        let thirdText = try await SMTPServerProcess.read(third[2])["text"] as? String ?? ""
        #expect(thirdText.contains(newKey) && !thirdText.contains(key))
        // Bad input changes nothing and queues nothing.
        let bad = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)/email", headers: Self.auth,
                                           json: #"{"customer_email":"x@y.example\r\nBcc: evil@z.example"}"#, using: .shared)
        #expect(bad.status == 400)
        let unknown = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/nope/email", headers: Self.auth, using: .shared)
        #expect(unknown.status == 404)
        try await Task.sleep(for: .seconds(1))
        #expect(smtp.messages().count == 3)
        #expect(await server.terminate() == 0)
        // No key in clear anywhere in the database (the outbox names the license; the key is sealed).
        for file in [database, database + "-wal"] where FileManager.default.fileExists(atPath: file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            for secret in [key, newKey, LicenseKey.normalize(key), LicenseKey.normalize(newKey)] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds a key in clear")
            }
        }
    }

    @Test func anOutageDelaysMailAndLosesNoneAndSendsEachOnce() async throws {
        let directory = try temporaryDirectory()
        // Take a port, then leave it closed: the SMTP server is down while licenses are minted.
        let probe = try await SMTPServerProcess(folder: directory.appendingPathComponent("probe"))
        let port = probe.port
        await probe.stop()
        let server = try await ServerProcess(database: directory.appendingPathComponent("k.sqlite").path, environment: Self.passwordEnvironment,
                                             arguments: Self.mailArguments(nil, port: port, tls: "none"))
        _ = try await server.seedLicense(token: "t")
        var keys: Set<String> = []
        for index in 0..<5 {
            let minted = try await Self.mint(server, email: "buyer\(index)@example.com")
            #expect(minted.status == 201)
            if let key = minted.body["license_key"] as? String { keys.insert(key) }
        }
        try await Task.sleep(for: .seconds(3))  // a few failed tries
        let smtp = try await SMTPServerProcess(folder: directory.appendingPathComponent("mail"), port: port)
        defer { Task { await smtp.stop() } }
        let received = try await smtp.waitForMessages(5, limit: .seconds(60))
        try await Task.sleep(for: .seconds(3))  // nothing more comes
        #expect(smtp.messages().count == 5)
        var mailed: Set<String> = []
        var recipients: Set<String> = []
        for message in received {
            let mail = try await SMTPServerProcess.read(message)
            if let key = (mail["text"] as? String)?.split(whereSeparator: \.isWhitespace).first(where: { $0.hasPrefix("ACME-") }) { mailed.insert(String(key)) }
            recipients.formUnion(try smtp.envelope(message)["rcpt_tos"] as? [String] ?? [])
        }
        #expect(mailed == keys)
        #expect(recipients == Set((0..<5).map { "buyer\($0)@example.com" }))
        #expect(await server.terminate() == 0)
    }

    /// The machine is lost with a mail still queued: the backup restored with the right master
    /// key sends it, and can mail any other license's key again.
    @Test func aRestoredBackupStillMailsKeys() async throws {
        let directory = try temporaryDirectory()
        let live = directory.appendingPathComponent("live.sqlite").path
        // The SMTP server is down while the license is minted: its mail stays in the outbox.
        // Port 1, where nothing listens: a port freed by a stopped server can be taken by another
        // test's SMTP server under a parallel run, which would take or refuse the mail. Its first
        // failed try puts the next 10 s (±20%) away, which the restored outbox keeps.
        let server = try await ServerProcess(
            database: live, environment: Self.passwordEnvironment, arguments: Self.mailArguments(nil, port: 1, tls: "none", retrySeconds: 10)
        )
        let (sdkKey, seededKey, seededId) = try await server.seedLicense(token: "t")
        let queued = try await Self.mint(server, email: "queued@example.com")
        let queuedKey = try #require(queued.body["license_key"] as? String)
        // Killed once its first try has failed and been given back, then backed up. Not before:
        // a process killed while it holds the mail (claimed, mid-try) leaves the row locked for
        // the claim's lease (MailService.lease, 300 s) so that no other process takes it, and the
        // restored server would wait that long (this test failed that way now and then when it
        // killed the server as soon as the mint was committed). The next try is 8–12 s later.
        // The test's own connection is closed before the kill, so the crashed server's WAL is
        // left for the backup to take, as a lost machine would leave it.
        let given = try await Self.withOutbox(at: live) { try await Self.waitForFailedTry(in: $0, to: "queued@example.com") }
        try #require(given, "no failed try of the mail to queued@example.com within 60 s")
        _ = kill(server.process.processIdentifier, SIGKILL)
        try #require(try await CrashTests.exits(server.process, within: .seconds(10)))
        let backup = directory.appendingPathComponent("backup.sqlite").path
        let made = try await CLI.run(["backup", "--db", live, "--to", backup])
        #expect(made.status == 0, "\(made.stderr)")

        let restored = directory.appendingPathComponent("restored.sqlite").path
        let keyFile = try BackupDrillTests.keyFile([UInt8](repeating: 4, count: 32), in: directory, name: "master.key")
        let restore = try await CLI.run(["restore", "--from", backup, "--db", restored, "--master-key-file", keyFile])
        #expect(restore.status == 0, "\(restore.stderr)")
        // The row as the backup kept it: pending, and not held by the killed server.
        let kept = try await Self.withOutbox(at: restored) { try await Self.outboxRow(in: $0, to: "queued@example.com") }
        #expect(kept?.status == "pending" && kept?.lockedUntil == 0, "the restored mail: \(String(describing: kept))")
        let smtp = try await SMTPServerProcess(folder: directory.appendingPathComponent("mail"))
        defer { Task { await smtp.stop() } }
        let revived = try await ServerProcess(
            database: restored, environment: ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_SMTP_PASSWORD": SMTPServerProcess.password],
            arguments: Self.mailArguments(smtp, tls: "none") + ["--master-key-file", keyFile]
        )
        // The restored outbox keeps the row's back-off (8–12 s after the first server's one failed
        // try), so this waits longer than a fresh mail would need.
        let first = try await smtp.waitForMessages(1, limit: .seconds(100))
        try #require(first.count == 1)
        #expect(try smtp.envelope(first[0])["rcpt_tos"] as? [String] == ["queued@example.com"])
        #expect((try await SMTPServerProcess.read(first[0])["text"] as? String)?.contains(queuedKey) == true)
        let resend = try await revived.request(.POST, "/admin/v1/tenants/acme/products/app/licenses/\(seededId)/email", headers: Self.auth,
                                               json: #"{"customer_email":"seeded@example.com"}"#, using: .shared)
        #expect(resend.status == 202)
        let second = try await smtp.waitForMessages(2)
        try #require(second.count == 2)
        let text = try await SMTPServerProcess.read(second[1])["text"] as? String ?? ""
        let mailedKey = try #require(text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("ACME-") }.map(String.init))
        #expect(mailedKey == seededKey)
        for (key, machine) in [(queuedKey, "r1"), (mailedKey, "r2")] {
            let activation = try await revived.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                      json: #"{"license_key":"\#(key)","instance_name":"Mac","machine_hash":"\#(machine)"}"#, using: .shared)
            #expect(activation.status == 200)
        }
        #expect(await revived.terminate() == 0)
    }

    @Test func headerInjectionAndMailWithoutItsPrerequisitesAreRefused() async throws {
        let directory = try temporaryDirectory()
        let smtp = try await SMTPServerProcess(folder: directory.appendingPathComponent("mail"))
        defer { Task { await smtp.stop() } }
        let server = try await ServerProcess(database: directory.appendingPathComponent("k.sqlite").path, environment: Self.passwordEnvironment,
                                             arguments: Self.mailArguments(smtp, tls: "none"))
        _ = try await server.seedLicense(token: "t")
        for email in [#"a@b.example\r\nBcc: evil@x.example"#, #"a@b.example\nBcc: evil@x.example"#, #"a@b.example\rX"#] {
            let refused = try await Self.mint(server, email: email)
            #expect(refused.status == 400)
            #expect(refused.body["code"] as? String == "INVALID_REQUEST")
        }
        let noAddress = try await server.request(.POST, "/admin/v1/tenants/acme/products/app/licenses", headers: Self.auth,
                                                 json: #"{"key_type_id":"pro","send_email":true}"#, using: .shared)
        #expect(noAddress.status == 400)
        let listed = try await server.request(.GET, "/admin/v1/tenants/acme/products/app/licenses", headers: Self.auth, using: .shared)
        #expect((listed.body["licenses"] as? [Any])?.count == 1)  // the seeded one only
        try await Task.sleep(for: .seconds(1))
        #expect(smtp.messages().isEmpty)
        #expect(await server.terminate() == 0)

        // A server without mail refuses send_email, and says why.
        let plain = try await ServerProcess(database: directory.appendingPathComponent("p.sqlite").path, environment: Self.environment)
        _ = try await plain.seedLicense(token: "t")
        let refused = try await Self.mint(plain, email: "buyer@example.com")
        #expect(refused.status == 422 && refused.body["code"] as? String == "MAIL_NOT_CONFIGURED")
        #expect(await plain.terminate() == 0)
        // A mail setting that cannot work stops the server at once.
        let bad = try await CLI.run(["serve", "--db", directory.appendingPathComponent("b.sqlite").path, "--smtp-url", "smtp://mail.example.com?tls=maybe", "--mail-from", "a@b.example"])
        #expect(bad.status == 64 && bad.stderr.contains("tls must be"))
        let noFrom = try await CLI.run(["serve", "--db", directory.appendingPathComponent("b.sqlite").path, "--smtp-url", "smtp://mail.example.com"])
        #expect(noFrom.status == 64 && noFrom.stderr.contains("--mail-from"))
    }

    /// Runs `body` on a connection of its own to the database at `path`, closed on every path (an
    /// unclosed sqlite-nio handle asserts in debug builds).
    static func withOutbox<R>(at path: String, _ body: (Database) async throws -> R) async throws -> R {
        let database = try await Database.sqlite(path: path, logger: Logger(label: "mail-test"))
        do {
            let result = try await body(database)
            await database.close()
            return result
        } catch {
            await database.close()
            throw error
        }
    }

    /// The outbox row of the mail to `address`: its claim (`locked_until`, 0 when no process
    /// holds it), status and last error.
    static func outboxRow(in database: Database, to address: String) async throws -> (lockedUntil: Int64, status: String, lastError: String?)? {
        let row = try await database.sql.raw(
            "SELECT locked_until, status, last_error FROM mail_outbox WHERE to_address = \(bind: address)"
        ).first()
        guard let row else { return nil }
        return (try row.decode(column: "locked_until", as: Int64.self), try row.decode(column: "status", as: String.self),
                try row.decode(column: "last_error", as: String?.self))
    }

    /// Waits (at most 60 s) until a try of the mail to `address` has failed and been given back
    /// (still pending, no longer held); false when none was within that time.
    static func waitForFailedTry(in database: Database, to address: String) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let row = try await outboxRow(in: database, to: address), row.status == "pending", row.lastError != nil, row.lockedUntil == 0 { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
