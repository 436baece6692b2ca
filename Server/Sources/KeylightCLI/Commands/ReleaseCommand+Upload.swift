import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calls of `release publish`, in order: create the draft, upload its file, publish it.
struct ReleasePublisher {
    let plan: PublishPlan

    /// Prints the outcome; any failure is one `keylight: error:` line and exit status 1, with a
    /// word on the draft when one was made (its version is taken in its channel from then on).
    func run() async throws {
        do {
            try await HTTPClient.withHTTPClient(configuration: AdminAPI.configuration) { http in
                try await publish(using: AdminAPI(http: http, token: plan.token))
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Standard.error("keylight: error: \(error)")
            throw ExitCode(1)
        }
    }

    private func publish(using api: AdminAPI) async throws {
        let created = try await api.send(
            .POST, plan.routes.releases, json: try JSONEncoder().encode(plan.create),
            idempotencyKey: UUID().uuidString, what: "creating the release"
        ).expecting(201)
        let draft = try created.decode(ReleaseAnswer.self, what: "the new release")
        Standard.error("keylight: created draft \(draft.id): version \(draft.version) (\(draft.short_version)) in channel \(draft.channel)")
        if plan.releasedAtSource == .server {
            Standard.error(ReleasedAtNote.text(seconds: draft.released_at, source: .server))
        }
        do {
            let (artifactAnswer, artifact) = try await upload(to: draft.id, using: api)
            let release: ReleaseAnswer
            let json: Data
            if plan.publish {
                let published = try await api.send(
                    .POST, plan.routes.action("publish", release: draft.id), json: nil,
                    idempotencyKey: UUID().uuidString, what: "publishing the release"
                ).expecting(200)
                release = try published.decode(ReleaseAnswer.self, what: "the published release")
                guard release.state == "published" else { throw ReleaseFailure("the server answered the publish with state \(release.state)") }
                json = published.body
            } else {
                release = draft
                json = try Self.withArtifact(created.body, artifactAnswer.body)
            }
            if plan.json {
                Standard.output(json)
            } else {
                for line in [
                    "id: \(release.id)", "version: \(release.version)", "short_version: \(release.short_version)", "channel: \(release.channel)",
                    "released_at: \(release.released_at)", "file_name: \(artifact.file_name)", "length: \(artifact.length)",
                    "sha256: \(artifact.sha256)", "signed_by: \(artifact.signed_by)", "state: \(release.state)",
                ] { Standard.line(line) }
            }
        } catch {
            Standard.error("keylight: error: \(error)")
            Standard.error("keylight: release \(draft.id) stays a draft on the server (version \(draft.version) in channel \(draft.channel)); "
                + "finish it with POST \(plan.routes.action("publish", release: draft.id)) once it has its file, or withdraw it with …/yank.")
            throw ExitCode(1)
        }
    }

    /// Streams the file, then checks the server kept exactly the bytes sent: the same length and
    /// the SHA-256 measured on the way out.
    private func upload(to releaseId: String, using api: AdminAPI) async throws -> (APIAnswer, ArtifactAnswer) {
        let file = plan.file
        let meter = UploadMeter(total: file.length, drawsProgress: isatty(STDERR_FILENO) != 0)
        var request = HTTPClientRequest(url: plan.routes.artifacts(release: releaseId, query: plan.query))
        request.method = .PUT
        api.authorize(&request)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        // `.known` makes AsyncHTTPClient send Content-Length: the server refuses an oversized file before reading it.
        request.body = .stream(FileUploadChunks(descriptor: file.descriptor, length: file.length, meter: meter), length: .known(file.length))
        Standard.error("keylight: uploading \(file.path) (\(UploadProgress.megabytes(file.length)) MB)")
        let sent = request
        let answer: APIAnswer
        do {
            defer { meter.endLine() }
            answer = try await withThrowingTaskGroup(of: APIAnswer?.self, returning: APIAnswer.self) { group in
                // No deadline for the whole upload (a large file on a slow line takes what it takes);
                // the watchdog ends it when nothing moves, the read timeout once the file is sent.
                group.addTask { try await api.exchange(sent, deadline: .distantFuture) }
                group.addTask {
                    try await meter.watchForStall(limit: .seconds(UploadMeter.stallSeconds))
                    return nil
                }
                while let result = try await group.next() {
                    if let result {
                        group.cancelAll()
                        return result
                    }
                }
                throw ReleaseFailure("the upload ended without an answer")
            }
        } catch let failure as ReleaseFailure {
            throw failure
        } catch {
            throw ReleaseFailure("uploading the file: \(error)")
        }
        let artifactAnswer = try answer.expecting(201)
        let artifact = try artifactAnswer.decode(ArtifactAnswer.self, what: "the upload")
        guard let digest = meter.sha256 else { throw ReleaseFailure("the upload ended before the whole file was read") }
        guard artifact.length == file.length, artifact.sha256.lowercased() == digest else {
            throw ReleaseFailure("the server kept \(artifact.length) bytes with SHA-256 \(artifact.sha256), but \(file.path) is \(file.length) bytes with SHA-256 \(digest); not publishing")
        }
        Standard.error("keylight: uploaded \(artifact.file_name): \(artifact.length) bytes, SHA-256 \(digest) checked, signed by the \(artifact.signed_by)")
        return (artifactAnswer, artifact)
    }

    /// A draft's JSON with its artifact, for `--json --draft`: the release as publishing would
    /// have shown it, without a GET (which needs products:read, a token for CI may lack it).
    static func withArtifact(_ release: Data, _ artifact: Data) throws -> Data {
        guard var object = try JSONSerialization.jsonObject(with: release) as? [String: Any],
              let artifactObject = try JSONSerialization.jsonObject(with: artifact) as? [String: Any] else {
            throw ReleaseFailure("the server's answer is not a JSON object")
        }
        object["artifacts"] = [artifactObject]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}

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

/// The file's bytes in 256 KiB buffers, never the whole file in memory. Each read runs on NIO's
/// blocking pool: this executable's tasks run on the event loops (``EventLoopExecutor``), and a
/// read from a slow disk must not hold up the connection's I/O.
struct FileUploadChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    static let chunkSize = 256 * 1_024

    let descriptor: Int32
    let length: Int64
    let meter: UploadMeter

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(descriptor: descriptor, length: length, meter: meter)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let descriptor: Int32
        let length: Int64
        let meter: UploadMeter
        var offset: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard offset < length else {
                meter.finish()
                return nil
            }
            let (descriptor, position) = (self.descriptor, offset)
            let count = Int(Swift.min(Int64(FileUploadChunks.chunkSize), length - offset))
            let chunk = try await NIOThreadPool.singleton.runIfActive { try FileUploadChunks.read(descriptor, at: position, count: count) }
            offset += Int64(chunk.readableBytes)
            meter.record(chunk)
            return chunk
        }
    }

    /// `count` bytes at `position`; a file that ends sooner changed under the upload, which the
    /// declared Content-Length cannot survive.
    static func read(_ descriptor: Int32, at position: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        while buffer.readableBytes < count {
            let done = buffer.readableBytes
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { raw in
                result = pread(descriptor, raw.baseAddress, count - done, off_t(position + Int64(done)))
                return Swift.max(result, 0)
            }
            if result < 0, errno == EINTR { continue }
            guard result >= 0 else { throw ReleaseFailure("reading the file failed: \(String(cString: strerror(errno)))") }
            guard result > 0 else { throw ReleaseFailure("the file ended at byte \(position + Int64(done)): it changed while uploading") }
        }
        return buffer
    }
}

/// The upload's tally: bytes read and their SHA-256 (for the check of the server's answer), when
/// they last moved (for the watchdog), and the progress line. Shared by the body's iterator and
/// the watchdog task.
final class UploadMeter: @unchecked Sendable {
    // @unchecked: every stored var is read and written under `lock`.
    /// The server drops an upload after 30 s without a byte; this ends one whose connection went
    /// quiet without closing (a dead network), which would otherwise wait forever.
    static let stallSeconds: Int64 = 60

    let total: Int64
    private let drawsProgress: Bool
    private let started: ContinuousClock.Instant
    private let lock = NSLock()
    private var hasher = SHA256()
    private var sent: Int64 = 0
    private var lastMove: ContinuousClock.Instant
    private var throttle = RedrawThrottle()
    private var lineOpen = false

    init(total: Int64, drawsProgress: Bool) {
        self.total = total
        self.drawsProgress = drawsProgress
        started = .now
        lastMove = started
    }

    func record(_ chunk: ByteBuffer) {
        let line: String? = lock.withLock {
            chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            sent += Int64(chunk.readableBytes)
            let now = ContinuousClock.now
            lastMove = now
            guard drawsProgress, throttle.shouldDraw(at: now) else { return nil }
            lineOpen = true
            return UploadProgress.line(sent: sent, total: total, elapsed: now - started)
        }
        if let line { Self.draw(line) }
    }

    /// The body's end: the whole line is drawn once more, at 100%.
    func finish() {
        let line: String? = lock.withLock {
            guard drawsProgress else { return nil }
            lineOpen = true
            return UploadProgress.line(sent: sent, total: total, elapsed: ContinuousClock.now - started)
        }
        if let line { Self.draw(line) }
    }

    /// Ends the progress line, so what is printed next starts on a line of its own.
    func endLine() {
        if lock.withLock({ () -> Bool in defer { lineOpen = false }; return lineOpen }) {
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }

    /// The lowercase hex SHA-256 of the file, once all of it was read.
    var sha256: String? {
        lock.withLock {
            guard sent == total else { return nil }
            return hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Returns once the whole file was read; throws when nothing was read for `limit` before.
    func watchForStall(limit: Duration) async throws {
        while true {
            try await Task.sleep(for: .seconds(1))
            let (done, idle) = lock.withLock { (sent >= total, ContinuousClock.now - lastMove) }
            if done { return }
            if idle >= limit { throw ReleaseFailure("the upload stalled: nothing was sent for \(Self.stallSeconds) s") }
        }
    }

    private static func draw(_ line: String) {
        // `\r` back to the line's start, ESC[K clears what a longer line left.
        FileHandle.standardError.write(Data(("\r" + line + "\u{1B}[K").utf8))
    }
}

/// At most one redraw per interval, the first at once.
struct RedrawThrottle {
    var interval: Duration = .milliseconds(100)
    private(set) var last: ContinuousClock.Instant?

    mutating func shouldDraw(at now: ContinuousClock.Instant) -> Bool {
        if let last, now - last < interval { return false }
        last = now
        return true
    }
}

/// The progress line: `[#####-----]  42%  12.3 / 29.1 MB  4.2 MB/s` (MB of 10^6 bytes).
enum UploadProgress {
    static let barWidth = 24

    static func line(sent: Int64, total: Int64, elapsed: Duration) -> String {
        let fraction = total > 0 ? min(1, max(0, Double(sent) / Double(total))) : 1
        let filled = Int(fraction * Double(barWidth))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
        let percent = String(Int(fraction * 100))
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let speed = seconds > 0 ? Double(sent) / seconds / 1e6 : 0
        return "[\(bar)] \(String(repeating: " ", count: max(0, 3 - percent.count)))\(percent)%  \(megabytes(sent)) / \(megabytes(total)) MB  \(String(format: "%.1f", speed)) MB/s"
    }

    static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f", Double(bytes) / 1e6)
    }
}
