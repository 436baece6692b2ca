import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
@testable import KeylightServer
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// `Idempotency-Key` on the admin API's POSTs.
@Suite(.timeLimit(.minutes(6))) struct IdempotencyTests {
    static func post(_ client: Client, _ path: String, _ body: String, key: String?, token: String = Harness.adminToken) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(token)"]
        if let key { headers[.idempotencyKey] = key }
        return try await client.request(.post, "/admin/v1" + path, headers: headers, body: body)
    }

    @Test func aRetriedMintReplaysTheFirstAnswerAndMintsOnce() async throws {
        try await Harness().run { client in
            let seed = try await client.seed()
            let path = "/tenants/acme/products/app/licenses"
            let body = #"{"key_type_id":"\#(seed.keyType)","customer_email":"retry@example.com"}"#
            let licensesBefore = try await client.count("SELECT COUNT(*) AS n FROM licenses")
            let first = try await Self.post(client, path, body, key: "mint-1")
            #expect(first.status == .created && first.headers[.idempotentReplayed] == nil)
            let again = try await Self.post(client, path, body, key: "mint-1")
            #expect(again.status == .created && again.body == first.body && again.headers[.idempotentReplayed] == "true")
            #expect(again.headers[.contentType] == first.headers[.contentType])
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == licensesBefore + 1)
            // Another body under the same key: refused, nothing minted.
            let other = try await Self.post(client, path, #"{"key_type_id":"\#(seed.keyType)","customer_email":"other@example.com"}"#, key: "mint-1")
            #expect(other.status == .unprocessableContent && other.code == "IDEMPOTENCY_MISMATCH")
            // Another path under the same key: refused too.
            #expect(try await Self.post(client, "/tenants/acme/products/app/licenses/\(seed.licenseId)/remint", "{}", key: "mint-1").code == "IDEMPOTENCY_MISMATCH")
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == licensesBefore + 1)
            // Without a key, every POST runs.
            #expect(try await Self.post(client, path, body, key: nil).status == .created)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == licensesBefore + 2)
            // The kept answer holds the key only sealed.
            let key = try #require(first["license_key"] as? String)
            let kept = try await client.database.sql.raw("SELECT sealed_answer FROM idempotency_keys").all(decodingColumn: "sealed_answer", as: String.self)
            #expect(kept.count == 1 && !kept[0].contains(key) && !kept[0].contains(LicenseKey.normalize(key)))
        }
    }

    @Test func refusalsAreKeptAndServerErrorsAreNot() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            let refused = try await Self.post(client, "/tenants/acme/products/app/licenses", #"{"key_type_id":"nope"}"#, key: "bad-1")
            #expect(refused.status == .notFound || refused.status == .badRequest)
            let replayed = try await Self.post(client, "/tenants/acme/products/app/licenses", #"{"key_type_id":"nope"}"#, key: "bad-1")
            #expect(replayed.status == refused.status && replayed.body == refused.body && replayed.headers[.idempotentReplayed] == "true")
            // A key that is not one: 400, nothing kept.
            for bad in ["", String(repeating: "k", count: 256), "has space", "tab\tkey", "é"] {
                var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(Harness.adminToken)"]
                headers[.idempotencyKey] = bad
                let reply = try await client.request(.post, "/admin/v1/tenants", headers: headers, body: #"{"id":"t2","name":"T"}"#)
                #expect(reply.status == .badRequest, "\(bad.debugDescription)")
            }
            #expect(try await client.database.tenant(id: "t2") == nil)

            // A 5xx is not kept: the same key runs again. (The store, driven directly.)
            let keys = IdempotencyKeys(database: client.database, sealer: client.server.admin.sealer, clock: client.clock)
            var head = HTTPRequest(method: .post, scheme: "http", authority: "x", path: "/admin/v1/x")
            head.headerFields[.idempotencyKey] = "five-hundred"
            head.headerFields[.authorization] = "Bearer t"
            let request = Request(head: head, body: .init(buffer: ByteBuffer()))
            let calls = Counter()
            let failed = try await keys.run(request, body: ByteBuffer()) { calls.increment(); return Response(status: .internalServerError) }
            #expect(failed.status == .internalServerError)
            let succeeded = try await keys.run(request, body: ByteBuffer()) { calls.increment(); return try JSONBody.response(["ok": true]) }
            #expect(succeeded.status == .ok && calls.value == 2)
            let replay = try await keys.run(request, body: ByteBuffer()) { calls.increment(); return Response(status: .ok) }
            #expect(replay.headers[.idempotentReplayed] == "true" && calls.value == 2)
            // A thrown error that is not an answer is not kept either.
            head.headerFields[.idempotencyKey] = "thrown"
            let thrown = Request(head: head, body: .init(buffer: ByteBuffer()))
            await #expect(throws: CancellationError.self) { try await keys.run(thrown, body: ByteBuffer()) { throw CancellationError() } }
            #expect(try await keys.run(thrown, body: ByteBuffer()) { try JSONBody.response(["ran": true]) }.status == .ok)
        }
    }

    @Test func concurrentRequestsWithOneKeyHaveOneEffect() async throws {
        try await Harness().run(.live) { client in
            let seed = try await client.seed()
            let before = try await client.count("SELECT COUNT(*) AS n FROM licenses")
            let body = #"{"key_type_id":"\#(seed.keyType)","customer_email":"race@example.com"}"#
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await Self.post(client, "/tenants/acme/products/app/licenses", body, key: "race-1") }
                }
                return try await group.reduce(into: [Reply]()) { $0.append($1) }
            }
            #expect(try await client.count("SELECT COUNT(*) AS n FROM licenses") == before + 1)
            let created = replies.filter { $0.status == .created }
            #expect(created.count + replies.filter { $0.code == "IDEMPOTENCY_IN_PROGRESS" }.count == 16)
            #expect(Set(created.map(\.body)).count == 1)
            #expect(created.filter { $0.headers[.idempotentReplayed] == nil }.count == 1)
        }
    }

    /// A claim taken over after its lease is the new owner's: the first owner can neither keep an
    /// answer in it nor release it; a running request renews its lease.
    @Test func onlyTheOwnerOfAClaimKeepsOrReleasesIt() async throws {
        try await Harness().run { client in
            let db = client.database
            let now = client.clock.unixSeconds
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "first", now: now, lease: 60, lifetime: 86_400) == .owned)
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "second", now: now + 30, lease: 60, lifetime: 86_400) == .inProgress)
            try await db.renewIdempotencyKey(scope: "s", key: "k", owner: "first", until: now + 120)
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "second", now: now + 90, lease: 60, lifetime: 86_400) == .inProgress)
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "second", now: now + 121, lease: 60, lifetime: 86_400) == .owned)
            // The first owner, late: its release and its answer change nothing.
            try await db.releaseIdempotencyKey(scope: "s", key: "k", owner: "first")
            try await db.answerIdempotencyKey(scope: "s", key: "k", owner: "first", sealedAnswer: "stale")
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "third", now: now + 122, lease: 60, lifetime: 86_400) == .inProgress)
            try await db.answerIdempotencyKey(scope: "s", key: "k", owner: "second", sealedAnswer: "kept")
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "f", owner: "third", now: now + 123, lease: 60, lifetime: 86_400) == .answered(sealedAnswer: "kept"))
            #expect(try await db.claimIdempotencyKey(scope: "s", key: "k", fingerprint: "other", owner: "third", now: now + 123, lease: 60, lifetime: 86_400) == .mismatch)
        }
    }

    /// A key belongs to the token that sent it: another token's request under the same key runs.
    @Test func keysAreScopedToTheToken() async throws {
        try await Harness().run { client in
            let keys = IdempotencyKeys(database: client.database, sealer: client.server.admin.sealer, clock: client.clock)
            func request(token: String) -> Request {
                var head = HTTPRequest(method: .post, scheme: "http", authority: "x", path: "/admin/v1/x")
                head.headerFields[.idempotencyKey] = "shared"
                head.headerFields[.authorization] = "Bearer \(token)"
                return Request(head: head, body: .init(buffer: ByteBuffer()))
            }
            #expect(IdempotencyKeys.scope(of: request(token: "a")) != IdempotencyKeys.scope(of: request(token: "b")))
            let calls = Counter()
            for token in ["a", "b", "a"] {
                let reply = try await keys.run(request(token: token), body: ByteBuffer()) { calls.increment(); return try JSONBody.response(["token": token]) }
                #expect(String(buffer: ByteBuffer(bytes: try await IdempotencyKeys.bytes(of: reply))).contains(token))
            }
            #expect(calls.value == 2)  // the third is token a's replay
        }
    }

    @Test func keysExpireAfterADayAndAreSwept() async throws {
        try await Harness().run { client in
            _ = try await client.seed()
            #expect(try await Self.post(client, "/tenants", #"{"id":"day1","name":"D"}"#, key: "daily").status == .created)
            client.clock.advance(by: 24 * 3_600 + 1)
            // The key is unused again: the same request runs (and is refused: the tenant exists).
            let again = try await Self.post(client, "/tenants", #"{"id":"day1","name":"D"}"#, key: "daily")
            #expect(again.status == .conflict && again.headers[.idempotentReplayed] == nil)
            client.clock.advance(by: 24 * 3_600 + 1)
            #expect(try await client.database.purgeIdempotencyKeys(now: client.clock.unixSeconds) == 1)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM idempotency_keys") == 0)
        }
    }
}

/// Counts calls from a closure the test hands to another type.
final class Counter: Sendable {
    private let box = NIOLockedValueBox(0)
    func increment() { box.withLockedValue { $0 += 1 } }
    var value: Int { box.withLockedValue { $0 } }
}
