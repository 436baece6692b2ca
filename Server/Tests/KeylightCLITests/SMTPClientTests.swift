import Foundation
import KeylightTestSupport
@testable import KeylightServer
import NIOCore
import NIOPosix
import Testing

/// Keylight's SMTP client against a real SMTP server (aiosmtpd), read back with Python's own
/// email parser.
@Suite(.serialized, .timeLimit(.minutes(6)), .enabled(if: PrerequisiteGate.enabled(SMTPServerProcess.available), "needs python3 with aiosmtpd and cryptography (.ci/run installs them)"))
struct SMTPClientTests {
    static func message(to: String = "buyer@example.com", subject: String = "Your Widget license", text: String, html: String = "<p>Hello</p>") throws -> MailMessage {
        var random = SystemRandomNumberGenerator()
        let from = try MailAddress("sales@acme.example", displayName: "Zoë’s Acme Sales")
        return MailMessage(from: from, to: try MailAddress(to, displayName: "Bjørn Buyer"), replyTo: try MailAddress("help@acme.example"),
                           subject: subject, text: text, html: html, messageId: MailMessage.newMessageId(from: from, using: &random), date: Date(timeIntervalSince1970: 1_795_000_000))
    }

    static func settings(_ server: SMTPServerProcess, tls: String, user: String = SMTPServerProcess.user, password: String = SMTPServerProcess.password) throws -> SMTPSettings {
        var settings = try SMTPSettings(url: "smtp://\(user):\(password)@localhost:\(server.port)?tls=\(tls)")
        settings.caFile = server.caFile
        settings.stepTimeout = .seconds(10)
        return settings
    }

    @Test func deliversOverStartTLSWithAuthAndReadsBackExactly() async throws {
        let server = try await SMTPServerProcess(folder: try temporaryDirectory(), starttls: true)
        defer { Task { await server.stop() } }
        // Lines that need dot-stuffing, a lone dot, long text and non-ASCII everywhere.
        let text = "Your key: ACME-AB12-CD34-EF56-GH78\n.\n.hidden line\n..two dots\n" + String(repeating: "long ", count: 60) + "\nÉtoile ✓\n"
        let message = try Self.message(subject: "Your Widget licence — ünïcödé and a long subject that goes on " + String(repeating: "and on ", count: 8), text: text, html: "<p>Key: <b>ACME-AB12</b></p>")
        try await SMTPClient(settings: Self.settings(server, tls: "starttls")).send(message, boundary: "kl-boundary-1")
        let received = try await server.waitForMessages(1)
        try #require(received.count == 1)
        let envelope = try server.envelope(received[0])
        #expect(envelope["tls"] as? Bool == true)
        #expect(envelope["authenticated"] as? Bool == true)
        #expect(envelope["mail_from"] as? String == "sales@acme.example")
        #expect(envelope["rcpt_tos"] as? [String] == ["buyer@example.com"])
        let mail = try await SMTPServerProcess.read(received[0])
        #expect(mail["defects"] as? [String] == [])
        #expect(mail["from_name"] as? String == "Zoë’s Acme Sales")
        #expect(mail["from_address"] as? String == "sales@acme.example")
        #expect((mail["to"] as? String)?.contains("Bjørn Buyer") == true)
        #expect(mail["reply_to"] as? String == "help@acme.example")
        #expect(mail["subject"] as? String == message.subject)
        #expect(mail["message_id"] as? String == message.messageId)
        #expect(mail["date_parsed"] as? String == "2026-11-18T11:06:40+00:00")
        #expect(mail["content_type"] as? String == "multipart/alternative")
        #expect(mail["parts"] as? [String] == ["text/plain", "text/html"])
        #expect((mail["text"] as? String)?.replacingOccurrences(of: "\r\n", with: "\n") == text)
        #expect(mail["html"] as? String == "<p>Key: <b>ACME-AB12</b></p>\n" || mail["html"] as? String == "<p>Key: <b>ACME-AB12</b></p>")
        #expect((mail["max_line"] as? Int ?? 999) <= 998)
        #expect(Set(mail["header_names"] as? [String] ?? []).isSuperset(of: ["Date", "From", "To", "Reply-To", "Subject", "Message-ID", "MIME-Version", "Content-Type"]))
    }

    @Test func plainToALocalRelayAuthLoginAndRefusals() async throws {
        let server = try await SMTPServerProcess(folder: try temporaryDirectory(), extra: ["--reject-rcpt", "nobody@example.com"])
        defer { Task { await server.stop() } }
        try await SMTPClient(settings: Self.settings(server, tls: "none")).send(try Self.message(text: "hello"), boundary: "b")
        let first = try await server.waitForMessages(1)
        try #require(first.count == 1)
        #expect(try server.envelope(first[0])["mechanism"] as? String == "PLAIN")  // preferred when offered

        // A server that offers only AUTH LOGIN: the user and password go as two challenges.
        let loginOnly = try await SMTPServerProcess(folder: try temporaryDirectory(), extra: ["--auth-only", "LOGIN"])
        defer { Task { await loginOnly.stop() } }
        try await SMTPClient(settings: Self.settings(loginOnly, tls: "none")).send(try Self.message(text: "by login"), boundary: "b")
        let viaLogin = try await loginOnly.waitForMessages(1)
        try #require(viaLogin.count == 1)
        let envelope = try loginOnly.envelope(viaLogin[0])
        #expect(envelope["mechanism"] as? String == "LOGIN" && envelope["authenticated"] as? Bool == true)
        let wrongLogin = await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: Self.settings(loginOnly, tls: "none", password: "nope")).send(try Self.message(text: "x"), boundary: "b")
        }
        #expect(wrongLogin?.isTransient == false && wrongLogin?.description.contains("535") == true)
        #expect(loginOnly.messages().count == 1)

        // A wrong password is final (535), as is a refused recipient (550).
        let wrong = await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: Self.settings(server, tls: "none", password: "nope")).send(try Self.message(text: "x"), boundary: "b")
        }
        #expect(wrong?.isTransient == false)
        #expect(wrong?.description.contains("535") == true)
        let refused = await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: Self.settings(server, tls: "none")).send(try Self.message(to: "nobody@example.com", text: "x"), boundary: "b")
        }
        #expect(refused?.isTransient == false && refused?.description.contains("550") == true)
        // STARTTLS asked of a server that does not offer it: final, nothing sent in clear.
        let noTLS = await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: Self.settings(server, tls: "starttls")).send(try Self.message(text: "x"), boundary: "b")
        }
        #expect(noTLS?.isTransient == false && noTLS?.description.contains("STARTTLS") == true)
        #expect(server.messages().count == 1)
    }

    @Test func aTemporaryFailureIsTransient() async throws {
        let folder = try temporaryDirectory()
        let flag = folder.appendingPathComponent("tempfail").path
        #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
        let server = try await SMTPServerProcess(folder: folder.appendingPathComponent("mail"), extra: ["--tempfail-file", flag])
        defer { Task { await server.stop() } }
        let error = await #expect(throws: SMTPError.self) {
            try await SMTPClient(settings: Self.settings(server, tls: "none")).send(try Self.message(text: "x"), boundary: "b")
        }
        #expect(error?.isTransient == true && error?.description.contains("451") == true)
        try FileManager.default.removeItem(atPath: flag)
        try await SMTPClient(settings: Self.settings(server, tls: "none")).send(try Self.message(text: "x"), boundary: "b")
        #expect(try await server.waitForMessages(1).count == 1)
    }

    @Test func aServerThatNeverAnswersTimesOutAndOneThatIsDownIsTransient() async throws {
        // Accepts connections and says nothing.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        defer { silent.close(promise: nil) }
        var settings = try SMTPSettings(url: "smtp://127.0.0.1:\(silent.localAddress?.port ?? 0)?tls=none")
        settings.stepTimeout = .seconds(1)
        let started = ContinuousClock.now
        let error = await #expect(throws: SMTPError.self) { try await SMTPClient(settings: settings).send(try Self.message(text: "x"), boundary: "b") }
        #expect(error?.isTransient == true && error?.description.contains("no answer in time") == true)
        #expect(ContinuousClock.now - started < .seconds(5))
        // Nothing listening: transient.
        let down = try SMTPSettings(url: "smtp://127.0.0.1:1?tls=none")
        let refused = await #expect(throws: SMTPError.self) { try await SMTPClient(settings: down).send(try Self.message(text: "x"), boundary: "b") }
        #expect(refused?.isTransient == true)
    }

    @Test func settingsAndAddressesRefuseWhatCouldInjectAHeader() throws {
        let settings = try SMTPSettings(url: "smtp://user%40x:p%3Ass@mail.example.com:2525?tls=tls")
        #expect(settings.username == "user@x" && settings.password == "p:ss" && settings.port == 2525 && settings.security == .tls)
        #expect(!settings.description.contains("p:ss") && !settings.description.contains("p%3Ass"))
        #expect(try SMTPSettings(url: "smtp://mail.example.com").port == 587)
        #expect(try SMTPSettings(url: "smtp://u@mail.example.com", password: "from-a-file").password == "from-a-file")
        for bad in ["http://mail.example.com", "smtp://mail.example.com?tls=maybe", "smtp://u@mail.example.com", "smtp://mail.example.com?tls=none&x=1", "smtp:///nohost"] {
            #expect(throws: SMTPError.self) { try SMTPSettings(url: bad) }
        }
        for bad in ["a@b.example\r\nBcc: evil@x.example", "a@b.example\nBcc: x@y.z", "two words@b.example", "<a@b.example>", "noat.example", "a@nodot", ""] {
            #expect(throws: MailAddress.Invalid.self) { try MailAddress(bad) }
        }
        #expect(throws: MailAddress.Invalid.self) { try MailAddress("a@b.example", displayName: "Eve\r\nBcc: x@y.z") }
        #expect(throws: MailAddress.Invalid.self) { try MailAddress("a@b.example", displayName: "Eve\u{2028}Bcc") }
        #expect(try MailAddress(parsing: "\"Acme Sales\" <sales@acme.example>") == MailAddress("sales@acme.example", displayName: "Acme Sales"))
        #expect(try MailAddress(parsing: "Acme <sales@acme.example>").header == "Acme <sales@acme.example>")
        #expect(try MailAddress("a@b.example", displayName: "Acme, Inc.").header == "\"Acme, Inc.\" <a@b.example>")
        // A subject with a line break cannot start a header either.
        let rendered = try Self.message(subject: "Hi\r\nBcc: evil@x.example", text: "x").rendered(boundary: "b")
        #expect(!rendered.contains("\r\nBcc:"))
        #expect(MailMessage.dataPayload(".a\r\nb\n.\r\nc") == Array("..a\r\nb\r\n..\r\nc\r\n.\r\n".utf8))
    }
}
