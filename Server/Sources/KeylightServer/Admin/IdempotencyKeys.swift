import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import KeylightCore
import Logging
import NIOCore

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
    static let idempotentReplayed = Self("Idempotent-Replayed")!
}

/// `Idempotency-Key` on the admin API's POSTs, as Stripe has it: the same key with the same
/// request replays the first answer byte for byte (`Idempotent-Replayed: true`); with another
/// request it is 422 `IDEMPOTENCY_MISMATCH`; while the first is running, a second waits for its
/// answer (up to ``wait``), then gets 409 `IDEMPOTENCY_IN_PROGRESS`. Keys belong to the token
/// that sent them and live 24 hours. A 5xx is not kept, so a retry runs again.
///
/// A kept answer is sealed under the master key whatever it holds (a mint's answer carries the
/// license key, a new product's its SDK key, a webhook endpoint's its secret).
///
/// A request holds its key under a lease it renews while it runs, as the key's owner; only the
/// owner keeps the answer or lets the key go. Not covered: a process that dies after its change
/// commits but before the answer is kept leaves the key running until the lease (``lease``) ends;
/// a retry after that runs again.
struct IdempotencyKeys: Sendable {
    let database: Database
    let sealer: SecretSealer
    let clock: any WallClock
    var logger = Logger(label: "keylight.idempotency")
    static let lifetime: Int64 = 24 * 3_600
    /// How long a running request holds its key before another may take it over.
    static let lease: Int64 = 60
    /// How long a second request waits for the first one's answer.
    var wait: Duration = .seconds(10)
    static let maxKeyLength = 255

    /// Runs `handler` once per key: the key's kept answer if there is one, else `handler`'s,
    /// kept. Without the header it just runs `handler`.
    func run(_ request: Request, body: ByteBuffer, _ handler: () async throws -> Response) async throws -> Response {
        guard let key = request.headers[.idempotencyKey] else { return try await handler() }
        guard (1...Self.maxKeyLength).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIError.invalidRequest("Idempotency-Key must be 1-\(Self.maxKeyLength) printable ASCII characters without spaces.")
        }
        let scope = Self.scope(of: request)
        let fingerprint = Self.fingerprint(request, body: body)
        let owner = UUID().uuidString
        let deadline = ContinuousClock.now + wait
        while true {
            switch try await database.claimIdempotencyKey(
                scope: scope, key: key, fingerprint: fingerprint, owner: owner, now: clock.unixSeconds, lease: Self.lease, lifetime: Self.lifetime
            ) {
            case .mismatch:
                throw APIError.idempotencyMismatch
            case .answered(let sealed):
                return try replay(sealed, scope: scope, key: key)
            case .inProgress:
                guard ContinuousClock.now < deadline else { throw APIError.idempotencyInProgress }
                try await Task.sleep(for: .milliseconds(50))
            case .owned:
                return try await answer(scope: scope, key: key, owner: owner, handler)
            }
        }
    }

    private func answer(scope: String, key: String, owner: String, _ handler: () async throws -> Response) async throws -> Response {
        // The lease is renewed while the request runs, so a slow request is never run twice.
        let (database, clock) = (self.database, self.clock)
        let renewal = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Self.lease / 3))
                try? await database.renewIdempotencyKey(scope: scope, key: key, owner: owner, until: clock.unixSeconds + Self.lease)
            }
        }
        defer { renewal.cancel() }
        let response: Response
        do {
            response = try await handler()
        } catch let error as APIError where error.status.code < 500 {
            // A refusal is an answer too: the same request would be refused the same way.
            response = error.jsonResponse(outcomeField: nil)
        } catch {
            try? await database.releaseIdempotencyKey(scope: scope, key: key, owner: owner)
            throw error
        }
        guard response.status.code < 500 else {
            try? await database.releaseIdempotencyKey(scope: scope, key: key, owner: owner)
            return response
        }
        let kept = KeptAnswer(status: response.status.code, contentType: response.headers[.contentType], body: try await Self.bytes(of: response))
        do {
            let sealed = try sealer.seal(try JSONEncoder().encode(kept), context: Self.sealContext(scope: scope, key: key))
            try await database.answerIdempotencyKey(scope: scope, key: key, owner: owner, sealedAnswer: sealed)
        } catch {
            // The change is made: say so. A retry waits out the lease, then runs again.
            logger.error("idempotency: the answer could not be kept", metadata: ["error": "\(type(of: error))"])
        }
        return kept.response(replayed: false)
    }

    private func replay(_ sealed: String, scope: String, key: String) throws -> Response {
        guard let opened = try? sealer.open(sealed, context: Self.sealContext(scope: scope, key: key)),
              let kept = try? JSONDecoder().decode(KeptAnswer.self, from: opened) else {
            // Sealed under another master key: the answer is gone, and the request must not run twice.
            throw APIError(status: .unprocessableContent, code: "IDEMPOTENCY_MISMATCH", message: "The answer kept for this Idempotency-Key can no longer be read; use a new key.")
        }
        return kept.response(replayed: true)
    }

    /// The token's hash: keys of one token are not another's.
    static func scope(of request: Request) -> String {
        let token = request.headers[.authorization].flatMap { bearerToken($0) } ?? ""
        return Hex.encode(SHA256.hash(data: Data(token.utf8)))
    }

    /// What makes two requests the same: method, path with query, and body bytes.
    static func fingerprint(_ request: Request, body: ByteBuffer) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(request.method.rawValue) \(request.uri.description)\n".utf8))
        hasher.update(data: Data(body.readableBytesView))
        return Hex.encode(hasher.finalize())
    }

    static func sealContext(scope: String, key: String) -> String {
        "keylight.idempotency.\(scope).\(key)"
    }

    static func bytes(of response: Response) async throws -> [UInt8] {
        let collected = Collected()
        try await response.body.write(Collector(into: collected))
        return collected.bytes
    }

    /// The bytes written, kept outside the writer (the body consumes its writer).
    private final class Collected {
        var bytes: [UInt8] = []
    }

    /// Collects a response body written in pieces.
    private struct Collector: ResponseBodyWriter {
        let into: Collected
        mutating func write(_ buffer: ByteBuffer) async throws { into.bytes += buffer.readableBytesView }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

/// An answer as kept: status, content type and the exact body.
struct KeptAnswer: Codable {
    let status: Int
    let contentType: String?
    let body: [UInt8]

    func response(replayed: Bool) -> Response {
        var headers: HTTPFields = [.cacheControl: "no-store"]
        if let contentType { headers[.contentType] = contentType }
        if replayed { headers[.idempotentReplayed] = "true" }
        return Response(status: HTTPResponse.Status(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
