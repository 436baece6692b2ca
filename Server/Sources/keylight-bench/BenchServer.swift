import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer
import Logging
import NIOCore

/// One in-process server on its own SQLite file with `activeLicenses` licenses that each have one
/// active instance (the validate workload) and filler licenses up to `totalLicenses`.
struct BenchServer: Sendable {
    let base: String
    let sdkKey: String
    let pairsFile: URL
    let task: Task<Void, any Error>
    let database: Database
    let server: KeylightServer
    /// How long importing the filler licenses took (nil when there were none).
    var importDuration: Duration?
    /// Started on what an earlier run seeded (`reuse`), not seeded now.
    var reused = false

    /// `validationTimes` is `.everyFlush` unless a phase ends each leg with
    /// ``KeylightServer/writeBufferedActivity()`` (the scale phase): gathered for 30 s, the times a
    /// leg's validates caused would be written in some later leg, `/healthz`'s or activate's.
    ///
    /// `reuse`: a server seeded in `directory` by an earlier run (its database, master key, pairs
    /// and SDK key files) starts on what is there, each instance validated once more instead of
    /// being seeded again; one that is not there is seeded and left for the next run, and a seeding
    /// that did not finish is refused.
    static func start(
        name: String, activeLicenses: Int, totalLicenses: Int, poolSize: Int, directory: URL, validationTimes: ValidationTimesSchedule = .everyFlush,
        reuse: Bool = false
    ) async throws -> BenchServer {
        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        var configuration = ServerConfiguration()
        configuration.databasePath = directory.appendingPathComponent("\(name).sqlite").path
        configuration.port = 0
        configuration.adminToken = "bench-token"
        configuration.limits = .unlimited
        configuration.poolSize = poolSize
        configuration.validationTimes = validationTimes
        // A database without the SDK key file is a seeding that did not finish: seeding on top of
        // it would fail later and less clearly.
        let kept = reuse ? try Seeder.kept(directory: directory, name: name, licenses: activeLicenses) : nil
        if reuse, kept == nil, FileManager.default.fileExists(atPath: configuration.databasePath ?? "") {
            throw BenchError("\(directory.path) holds a seeding that did not finish: remove the directory and run again")
        }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let server = try await buildApplication(configuration: configuration, logger: logger) { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
            portContinuation.finish()
        }
        // The stream ends with run(), so a server that fails before listening ends the wait.
        let task = Task {
            defer { portContinuation.finish() }
            try await server.application.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = try await task.value
            throw BenchError("server did not start")
        }
        let base = "http://127.0.0.1:\(port)"
        let seeded: Seeder.Seeded
        if let kept {
            seeded = kept
            try await Seeder.revalidate(base: base, seeded: kept)
        } else {
            seeded = try await Seeder.seed(base: base, licenses: activeLicenses, database: server.database, directory: directory, name: name)
        }
        var importDuration: Duration?
        if totalLicenses > activeLicenses {
            let clock = ContinuousClock()
            let start = clock.now
            try await importFiller(count: totalLicenses - activeLicenses, into: server.database)
            importDuration = clock.now - start
        }
        return BenchServer(
            base: base, sdkKey: seeded.sdkKey, pairsFile: seeded.pairs, task: task, database: server.database, server: server,
            importDuration: importDuration, reused: kept != nil
        )
    }

    /// The `X-Keylight-Nonce` of signed runs (base64 of 12 bytes).
    static let nonce = "AAECAwQFBgcICQoL"

    /// One wrk run of validate; with a nonce every response is signed (protocol section 3).
    func validate(with wrk: Wrk, script: String = WrkScripts.validate, nonce: String = "", samplePrefix: String = "", pace: String = "") async throws -> Wrk.Result {
        try await wrk.run(url: base + "/bench/app/validate", script: script, name: nonce.isEmpty ? "validate" : "signed", arguments: [pairsFile.path, sdkKey, nonce, samplePrefix, pace])
    }

    func stop() {
        task.cancel()
    }

    /// `count` more licenses (never activated), imported in batches, then the database tidied.
    private static func importFiller(count: Int, into database: Database) async throws {
        let now = SystemWallClock().unixSeconds
        var remaining = count
        while remaining > 0 {
            let size = min(remaining, 20_000)
            let batch = try (0..<size).map { _ in
                let key = try LicenseKey.generate(prefix: "BNCH")
                return License(
                    id: UUID().uuidString.lowercased(), tenantId: "bench", productId: "app", keyTypeId: "pro", keyHash: key.keyHash,
                    maskedKey: key.masked, status: .active, expiresAt: nil, customerEmail: nil, activeInstances: 0, createdAt: now, updatedAt: now
                )
            }
            remaining -= size
            try await database.importLicenses(batch, tidy: remaining == 0)
        }
    }
}

/// A few JSON calls for seeding.
struct AdminClient: Sendable {
    let base: String
    let token: String
    let http: HTTPClient

    func post(_ path: String, _ json: String, sdkKey: String? = nil) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let sdkKey { request.headers.add(name: "X-Keylight-SDK-Key", value: sdkKey) } else { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
