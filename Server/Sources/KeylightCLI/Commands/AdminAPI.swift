import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The admin API over AsyncHTTPClient: bearer token, JSON answers, every wait bounded.
struct AdminAPI: Sendable {
    let http: HTTPClient
    let token: String

    /// Connecting waits 10 s; an answer may take 120 s to start once a request is sent (the
    /// server checks a large file's signature before answering an upload). Redirects are not
    /// followed: one to another host would carry the token along.
    static var configuration: HTTPClient.Configuration {
        HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(120)))
    }
    static let jsonTimeout: TimeAmount = .seconds(60)
    /// An admin answer is a few kilobytes; anything past this is not one.
    static let answerLimit = 1 << 20
    /// Tries of a POST that carries an Idempotency-Key (the server replays a finished one).
    static let attempts = 2

    func authorize(_ request: inout HTTPClientRequest) {
        request.headers.add(name: "Authorization", value: "Bearer " + token)
        request.headers.add(name: "Accept", value: "application/json")
    }

    /// A JSON request. With an idempotency key, a failure that leaves the outcome unknown (no
    /// answer, a 5xx, the first try still running) is tried once more under the same key, so the
    /// server does the work once.
    func send(_ method: HTTPMethod, _ url: String, json: Data?, idempotencyKey: String?, what: String) async throws -> APIAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        authorize(&request)
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        if let idempotencyKey { request.headers.add(name: "Idempotency-Key", value: idempotencyKey) }
        let attempts = idempotencyKey == nil ? 1 : Self.attempts
        var attempt = 0
        while true {
            attempt += 1
            do {
                let answer = try await exchange(request, deadline: .now() + Self.jsonTimeout)
                guard attempt < attempts, answer.isWorthRetrying else { return answer }
                Standard.error("keylight: \(what) answered HTTP \(answer.status); trying again with the same Idempotency-Key")
            } catch {
                guard attempt < attempts, !(error is CancellationError) else { throw ReleaseFailure("\(what): \(error)") }
                Standard.error("keylight: \(what) failed (\(error)); trying again with the same Idempotency-Key")
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    func exchange(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> APIAnswer {
        let response = try await http.execute(request, deadline: deadline)
        let body = try await response.body.collect(upTo: Self.answerLimit)
        return APIAnswer(status: Int(response.status.code), body: Data(body.readableBytesView))
    }
}

/// An answer of the admin API.
struct APIAnswer: Sendable {
    var status: Int
    var body: Data

    /// A 5xx is not kept under its Idempotency-Key, and IDEMPOTENCY_IN_PROGRESS asks for a retry.
    var isWorthRetrying: Bool {
        status >= 500 || (status == 409 && AdminAPIFailure(status: status, body: body).code == "IDEMPOTENCY_IN_PROGRESS")
    }

    /// Self when the status is the one expected, else the server's error.
    func expecting(_ expected: Int) throws -> APIAnswer {
        guard status == expected else { throw AdminAPIFailure(status: status, body: body) }
        return self
    }

    func decode<T: Decodable>(_ type: T.Type, what: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw ReleaseFailure("\(what): the server's answer is not what this keylight expects (\(error))")
        }
    }
}

/// The server's `{"code","error"}`, or the start of whatever else came back (a proxy's page).
struct AdminAPIFailure: Error, CustomStringConvertible {
    var status: Int
    var code: String?
    var message: String

    init(status: Int, body: Data) {
        struct Problem: Decodable {
            var code: String?
            var error: String?
        }
        self.status = status
        if let problem = try? JSONDecoder().decode(Problem.self, from: body), let message = problem.error {
            code = problem.code
            self.message = message
        } else {
            code = nil
            let text = String(decoding: body.prefix(200), as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
            message = text.isEmpty ? "the server answered without a body" : text
        }
    }

    /// `<error> (<code>, HTTP <status>)`.
    var description: String { "\(message) (\(code.map { "\($0), " } ?? "")HTTP \(status))" }
}

/// A failure after the arguments were accepted: exit status 1.
struct ReleaseFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `POST …/releases` and `…/publish` answers, as far as the command reads them.
struct ReleaseAnswer: Decodable {
    var id: String
    var version: String
    var short_version: String
    var channel: String
    var released_at: Int64
    var state: String
}

/// `PUT …/artifacts` answers.
struct ArtifactAnswer: Decodable {
    var release_id: String
    var platform: String
    var arch: String
    var length: Int64
    var sha256: String
    var ed_signature: String
    var signed_by: String
    var file_name: String
}
