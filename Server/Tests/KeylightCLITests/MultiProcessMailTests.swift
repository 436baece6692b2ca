import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightTestSupport
import Testing

/// The mail outbox shared by several `keylight serve` processes on one PostgreSQL database: each
/// process sends, and each mail goes once (`FOR UPDATE SKIP LOCKED` and a lease per mail).
@Suite(.serialized, .timeLimit(.minutes(6)), .enabled(
    if: PrerequisiteGate.enabled(ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil && SMTPServerProcess.available),
    "needs KEYLIGHT_TEST_POSTGRES_URL and aiosmtpd (.ci/run sets up both)"
))
struct MultiProcessMailTests {
    @Test func threeProcessesSendEachQueuedMailOnce() async throws {
        let url = try await MultiProcessTests.freshDatabase()
        let directory = try temporaryDirectory()
        // The mails are queued while the SMTP server is down, so all three processes find them due at once.
        let probe = try await SMTPServerProcess(folder: directory.appendingPathComponent("probe"))
        let port = probe.port
        await probe.stop()
        let arguments = MailDeliveryTests.mailArguments(nil, port: port, tls: "none") + ["--database-url", url, "--rate-limit-license", "0"]
        let servers = try await MultiProcessTests.servers(3, in: directory, environment: MailDeliveryTests.passwordEnvironment, arguments: arguments)
        _ = try await servers[0].seedLicense(token: "t")
        let count = 30
        let keys = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<count {
                group.addTask {
                    let minted = try await MailDeliveryTests.mint(servers[index % 3], email: "buyer\(index)@example.com")
                    return minted.status == 201 ? minted.body["license_key"] as? String : nil
                }
            }
            return try await group.reduce(into: Set<String>()) { if let key = $1 { $0.insert(key) } }
        }
        #expect(keys.count == count)
        try await Task.sleep(for: .seconds(2))  // every process has failed its first tries
        let smtp = try await SMTPServerProcess(folder: directory.appendingPathComponent("mail"), port: port)
        defer { Task { await smtp.stop() } }
        let received = try await smtp.waitForMessages(count, limit: .seconds(90))
        try await Task.sleep(for: .seconds(4))  // and no second copy follows
        #expect(smtp.messages().count == count)
        var recipients: [String] = []
        var mailed: Set<String> = []
        for message in received {
            recipients += try smtp.envelope(message)["rcpt_tos"] as? [String] ?? []
            let text = try await SMTPServerProcess.read(message)["text"] as? String ?? ""
            if let key = text.split(whereSeparator: \.isWhitespace).first(where: { $0.hasPrefix("ACME-") }) { mailed.insert(String(key)) }
        }
        #expect(recipients.count == count && Set(recipients).count == count)
        #expect(mailed == keys)
        for server in servers { #expect(await server.terminate() == 0) }
    }
}
