import AsyncHTTPClient
import Foundation
import Glibc
import KeylightCore
@testable import KeylightServer
import NIOConcurrencyHelpers
import SQLKit
import Testing

/// Issue 35: a Paddle purchase that names only a customer id learns the buyer's address through
/// the tenant's Paddle API key — retried with back-off while Paddle fails, given up (audited)
/// after three days, each call bounded by a timeout.
@Suite(.timeLimit(.minutes(6))) struct PaddleCustomerLookupTests {
    /// Answers each customer's lookups from a script, in order (the last answer repeats).
    final class ScriptedAPI: PaddleCustomerAPI {
        private let script: NIOLockedValueBox<[String: [Result<String, PaddleAPIError>]]>
        private let calls = NIOLockedValueBox<[(customer: String, apiKey: String)]>([])

        init(_ script: [String: [Result<String, PaddleAPIError>]]) { self.script = NIOLockedValueBox(script) }

        var called: [(customer: String, apiKey: String)] { calls.withLockedValue { $0 } }

        func email(customerId: String, apiKey: String, environment: String?) async throws(PaddleAPIError) -> String {
            calls.withLockedValue { $0.append((customerId, apiKey)) }
            let answer = script.withLockedValue { script -> Result<String, PaddleAPIError> in
                var answers = script[customerId] ?? [.failure(PaddleAPIError(message: "unknown", retryable: false))]
                let first = answers[0]
                if answers.count > 1 { answers.removeFirst() }
                script[customerId] = answers
                return first
            }
            return try answer.get()
        }
    }

    static let down = PaddleAPIError(message: "Paddle answered HTTP 503", retryable: true)

    /// An address-less purchase of `customer`.
    static func purchase(_ client: Client, order: String, customer: String) async throws {
        var event = MerchantTests.transaction(order, email: nil)
        var data = try #require(event["data"] as? [String: Any])
        data["customer_id"] = customer
        event["data"] = data
        let reply = try await MerchantTests.paddle(client, event)
        #expect(reply.status == .ok, "\(reply.text)")
        #expect(try await MerchantTests.paid(client, order: order).first?.customerEmail == nil)
    }

    @Test func aFailingLookupIsRetriedWithBackOffAndGivenUpAfterThreeDays() async throws {
        var harness = Harness()
        // The server's own lookups (against the real Paddle) never run here: the test drives them.
        harness.configuration.customerLookupInterval = .seconds(3_600)
        try await harness.run { client in
            _ = try await MerchantTests.configured(client)
            #expect(try await client.admin(.put, "/tenants/acme/paddle", ["api_key": "pdl_live_apikey_test"]).status == .ok)
            try await Self.purchase(client, order: "txn_retry", customer: "ctm_retry")
            try await Self.purchase(client, order: "txn_never", customer: "ctm_never")
            let api = ScriptedAPI([
                "ctm_retry": [.failure(Self.down), .failure(Self.down), .success("late.buyer@shop.example")],
                "ctm_never": [.failure(Self.down)],
            ])
            let lookups = PaddleCustomerLookups(
                database: client.database, sealer: client.server.admin.sealer, api: api, clock: client.clock, mailBuyers: true, logger: Harness.logger
            )
            // First tries: both fail; each is due again 30 s later, and not before.
            #expect(await lookups.lookUpDue() == 2)
            #expect(api.called.allSatisfy { $0.apiKey == "pdl_live_apikey_test" })
            client.clock.advance(by: 29)
            #expect(await lookups.lookUpDue() == 0)
            client.clock.advance(by: 1)
            #expect(await lookups.lookUpDue() == 2)
            // Then 60 s: the third try of ctm_retry answers, and the buyer is mailed the key.
            client.clock.advance(by: 59)
            #expect(await lookups.lookUpDue() == 0)
            client.clock.advance(by: 1)
            #expect(await lookups.lookUpDue() == 2)
            #expect(try await MerchantTests.paid(client, order: "txn_retry").first?.customerEmail == "late.buyer@shop.example")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM mail_outbox WHERE to_address = 'late.buyer@shop.example'") == 1)
            #expect(api.called.filter { $0.customer == "ctm_retry" }.count == 3)
            // ctm_never: the waits double to an hour, and after three days it is given up, audited once.
            // Each retry is due exactly when the row says, and not a second before.
            var waits: [Int64] = []
            var waited: Int64 = 0
            while waits.count < 100 {
                let row = try #require(try await client.database.sql.raw("SELECT status, next_attempt_at FROM merchant_customers WHERE id = 'ctm_never'").first())
                guard try row.decode(column: "status", as: String.self) == "pending" else { break }
                let wait = try row.decode(column: "next_attempt_at", as: Int64.self) - client.clock.unixSeconds
                client.clock.advance(by: wait - 1)
                #expect(await lookups.lookUpDue() == 0)
                client.clock.advance(by: 1)
                #expect(await lookups.lookUpDue() == 1)
                waits.append(wait)
                waited += wait
            }
            #expect(waits.prefix(3) == [120, 240, 480], "\(waits)")
            #expect(waits.max() == 3_600 && waited >= 3 * 86_400 - 3_600 && waited <= 3 * 86_400 + 3_600, "\(waits)")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'paddle.customer_lookup_failed' AND target = 'ctm_never'") == 1)
            #expect(try await MerchantTests.paid(client, order: "txn_never").first?.customerEmail == nil)
        }
    }

    /// A Paddle that takes the connection and never answers: the lookup fails (retryable)
    /// within its timeout instead of holding the lookup forever.
    @Test func aLookupOfAPaddleThatNeverAnswersEndsAtItsTimeout() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        #expect(bound == 0 && listen(listener, 8) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Connections complete in the kernel's backlog and are never read: no answer ever comes.
        let api = PaddleHTTPAPI(client: .shared, baseURL: "http://127.0.0.1:\(port)", timeout: .seconds(1))
        let started = ContinuousClock.now
        await #expect(throws: PaddleAPIError(message: "Paddle could not be reached", retryable: true)) {
            _ = try await api.email(customerId: "ctm_01", apiKey: "k", environment: nil)
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
