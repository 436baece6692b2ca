import Foundation
import KeylightCore
import Logging
import ServiceLifecycle

/// How the server mails buyers: the SMTP server and the sender.
public struct MailConfiguration: Sendable {
    public var smtp: SMTPSettings
    public var from: MailAddress
    /// Seconds between looks at the outbox.
    public var pollInterval: Duration = .seconds(2)
    /// Tries before a mail is given up (failed, audited, counted): with the back-off below, about a day.
    public var maxAttempts = 12
    /// The first retry's delay in seconds; each further one doubles it, up to 4 h.
    public var retryBase: Double = 30

    public init(smtp: SMTPSettings, from: MailAddress) {
        self.smtp = smtp
        self.from = from
    }
}

/// Sends the outbox. Each due mail is taken for a lease (one sender per mail, across processes),
/// rendered, and sent; on the server's 250 it is marked sent before anything else, so a retry
/// never sends it twice (short of a crash between the 250 and that write). A transient failure
/// is retried with exponential back-off and jitter (30 s doubling to 4 h); a final one, or too
/// many tries, marks it failed, audited and counted in `keylight_mails_total{result="failed"}`.
struct MailService: Service {
    let database: Database
    let composer: MailComposer
    let client: SMTPClient
    let configuration: MailConfiguration
    let clock: any WallClock
    let metrics: ServerMetrics
    let logger: Logger
    /// A mail is held this long by the process sending it.
    static let lease: Int64 = 300
    static let backoffCap: Double = 4 * 3_600
    /// Finished "Lost your key?" rows (anybody's address, from the portal) are kept this long; a
    /// license's own mails stay, as its history.
    static let lostKeyRetentionDays: Int64 = 30

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            await sendDue()
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.pollInterval) }
            } catch {
                break
            }
        }
    }

    /// Sends what is due now; answers how many were taken.
    @discardableResult
    func sendDue() async -> Int {
        let jobs: [MailJob]
        do {
            jobs = try await database.claimDueMails(now: clock.unixSeconds, limit: 10, lease: Self.lease)
        } catch {
            logger.debug("could not read the mail outbox", metadata: ["error": "\(error)"])
            return 0
        }
        for job in jobs { await send(job) }
        return jobs.count
    }

    func send(_ job: MailJob) async {
        var random = SystemRandomNumberGenerator()
        let now = clock.unixSeconds
        let message: MailMessage
        do {
            message = try await composer.compose(job, now: now, random: &random)
        } catch let error as MailComposer.Unsendable {
            await give(up: job, error.description)
            return
        } catch let nothing as MailComposer.NothingToSend {
            metrics.recordMail("skipped")
            try? await database.skipMail(id: job.id, reason: nothing.reason, now: now)
            return
        } catch {
            await retry(job, "\(error)", using: &random)
            return
        }
        do {
            try await client.send(message, boundary: "keylight-" + UUID().uuidString.lowercased())
        } catch {
            if error.isTransient { await retry(job, error.description, using: &random) } else { await give(up: job, error.description) }
            return
        }
        do {
            try await database.markMailSent(id: job.id, now: clock.unixSeconds)
        } catch {
            // The server has the mail; if this write is lost the lease lapses and it goes again.
            logger.error("mail sent but not marked sent", metadata: ["mail_id": .string(job.id), "error": "\(error)"])
        }
        metrics.recordMail("sent")
        logger.info("mail sent", metadata: ["mail_id": .string(job.id), "kind": .string(job.kind.rawValue), "tenant": .string(job.tenantId)])
    }

    private func retry(_ job: MailJob, _ reason: String, using random: inout some RandomNumberGenerator) async {
        guard job.attempts < configuration.maxAttempts else {
            await give(up: job, "gave up after \(job.attempts) tries: \(reason)")
            return
        }
        let delay = Self.delay(attempt: job.attempts, base: configuration.retryBase, using: &random)
        metrics.recordMail("retried")
        logger.warning("mail not sent; will try again", metadata: ["mail_id": .string(job.id), "attempt": .stringConvertible(job.attempts), "in_seconds": .stringConvertible(Int(delay)), "error": .string(reason)])
        try? await database.retryMail(id: job.id, error: reason, next: clock.unixSeconds + Int64(delay))
    }

    private func give(up job: MailJob, _ reason: String) async {
        metrics.recordMail("failed")
        logger.error("mail failed", metadata: ["mail_id": .string(job.id), "tenant": .string(job.tenantId), "error": .string(reason)])
        try? await database.failMail(job, error: reason, now: clock.unixSeconds)
    }

    /// 30 s doubling per attempt up to 4 h, ±20 % jitter so a recovering server is not met by every mail at once.
    static func delay(attempt: Int, base first: Double, using random: inout some RandomNumberGenerator) -> Double {
        let base = min(backoffCap, first * pow(2, Double(max(0, attempt - 1))))
        return base * Double.random(in: 0.8...1.2, using: &random)
    }
}
