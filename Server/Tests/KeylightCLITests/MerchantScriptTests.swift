import Foundation
import KeylightCore
import KeylightTestSupport
import Testing

/// Selling through Paddle Billing, Lemon Squeezy and Polar, from outside:
/// `Tests/Merchants/merchant_money_paths.py` drives a real `keylight serve` that mails through a
/// real SMTP server (aiosmtpd), with events signed by each provider's own code (paddle-python-sdk,
/// standardwebhooks) or documented method (Lemon Squeezy's HMAC). Each provider's whole path —
/// payment event, license, mail, activation — plus duplicates, refunds before purchases,
/// subscriptions, bad and stale signatures, Paddle's address lookup and tenant isolation.
@Suite(.timeLimit(.minutes(6))) struct MerchantScriptTests {
    static func packagesInstalled() async -> Bool {
        (try? await ChildProcess.python("-c", ["import paddle_billing, standardwebhooks, aiosmtpd"]))?.status == 0
    }

    /// A port nothing listens on now (the script's fake Paddle API takes it).
    static func freePort() async throws -> Int {
        let output = try await ChildProcess.python("-c", ["import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        return try #require(Int(String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test func everyMerchantMoneyPathHoldsAgainstEventsSignedByTheProvidersOwnCode() async throws {
        guard await Self.packagesInstalled() else {
            try PrerequisiteGate.missing("paddle-python-sdk, standardwebhooks and aiosmtpd (pip install paddle-python-sdk==1.16.1 standardwebhooks==1.1.0 aiosmtpd==1.4.6)")
            return
        }
        let directory = try temporaryDirectory()
        let mail = directory.appendingPathComponent("mail")
        let smtp = try await SMTPServerProcess(folder: mail)
        let paddlePort = try await Self.freePort()
        let token = "merchant-script-token"
        let server: ServerProcess
        do {
            server = try await ServerProcess(
                database: directory.appendingPathComponent("merchants.sqlite").path,
                environment: ["KEYLIGHT_ADMIN_TOKEN": token, "KEYLIGHT_SMTP_PASSWORD": SMTPServerProcess.password, "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 9, count: 32))],
                arguments: MailDeliveryTests.mailArguments(smtp, tls: "none") + ["--paddle-api-base", "http://127.0.0.1:\(paddlePort)", "--rate-limit-license", "0"]
            )
        } catch {
            await smtp.stop()
            throw error
        }
        let run: (status: Int32, output: String)
        do {
            run = try await CLI.python("Tests/Merchants/merchant_money_paths.py", environment: [
                "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_ADMIN_TOKEN": token,
                "MAIL_DIR": mail.path, "PADDLE_API_PORT": String(paddlePort),
            ], limit: .seconds(240))
        } catch {
            _ = await server.terminate()
            await smtp.stop()
            throw error
        }
        _ = await server.terminate()
        await smtp.stop()
        #expect(run.status == 0, "\(run.output)")
        for check in ["Paddle: transaction.completed", "looked up with the API key", "when customer.created tells the address",
                      "Lemon Squeezy: order_created", "Polar: order.paid", "Standard Webhooks (base64) secret", "every merchant-of-record money path holds"] {
            #expect(run.output.contains(check), "missing check \(check): \(run.output)")
        }
        #expect(run.output.contains("ok: a Paddle upgrade and seats apply once and their refunds set them back"), "\(run.output)")
    }
}
