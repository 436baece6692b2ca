import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import NIOCore

/// Release delivery (issue 51), on a server in a child process (`serve-child`) so that the CPU
/// and memory read are the server's own, apart from curl's and wrk's:
///
/// 1. a large artifact of a public feed, downloaded whole by one client at a time from the server
///    and from nginx serving the same file, alternating (target: at least 0.8 x nginx's rate);
/// 2. the server's CPU per request of a licensed device's appcast (`--releases` published
///    releases, the newest ten each raising the minimum macOS, so the device's feed lists the
///    eleven builds Sparkle could pick, each with its own download link) against validate of the same
///    device, in alternating wrk rounds (target: at most 2 x). The feed cache keeps a product's
///    releases for 5 s, so runs longer than that include its re-reads, as a server in use does;
/// 3. the server's resident memory before, at the peak of, and after `--clients` downloads of the
///    large artifact at once (target: the peak at most 64 MiB above the baseline, so what a
///    download holds does not grow with the file).
struct ReleaseBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "releases",
        abstract: "Artifact downloads against nginx, appcast CPU against validate, memory under parallel downloads (needs curl and wrk; nginx for the comparison)."
    )

    @Option(help: "Size of the large artifact in MiB.")
    var artifactMb = 200

    @Option(help: "Rounds of each alternating comparison (downloads: one from each server per round, after one unmeasured); medians are reported.")
    var rounds = 3

    @Option(help: "Clients downloading the large artifact at once in the memory run.")
    var clients = 50

    @Option(help: "Published releases (4 KiB files) of the product whose appcast is measured; a feed lists at most 200.")
    var releases = 100

    @Option(help: "Seconds per wrk run of the CPU comparison.")
    var seconds = 5

    @Option(help: "Concurrent connections of the CPU comparison.")
    var connections = 16

    @Option(help: "The nginx binary (default: nginx on PATH or in /usr/sbin).")
    var nginx: String?

    func validate() throws {
        guard artifactMb >= 1, rounds >= 1, clients >= 1, seconds >= 1, connections >= 1 else {
            throw ValidationError("--artifact-mb, --rounds, --clients, --seconds and --connections must be at least 1")
        }
        // More would not all be in the feed, and the appcast measured would not be the one asked for.
        guard (1...200).contains(releases) else { throw ValidationError("--releases is 1-200: a feed lists at most 200 releases") }
    }

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-releases-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ledger = FailureLedger()
        let artifacts = directory.appendingPathComponent("artifacts").path
        let child = try await ChildServer.start([
            "--db", directory.appendingPathComponent("releases.sqlite").path, "--artifacts-dir", artifacts,
            "--key", Base64.encode([UInt8](repeating: 5, count: 32)),
        ])
        defer { child.stop() }
        let seeder = ReleaseSeeder(base: "http://127.0.0.1:\(child.port)")
        let device = try await seeder.licensedDevice(directory: directory)
        try await seeder.publishSmallReleases(releases)
        let large = try await seeder.publishLargeRelease(megabytes: artifactMb, directory: directory)

        try await downloadThroughput(large, base: seeder.base, artifacts: artifacts, directory: directory, ledger: ledger)
        try await appcastCPU(child: child, device: device, seeder: seeder, directory: directory, ledger: ledger)
        try await downloadMemory(child: child, url: seeder.base + large.path, length: large.length, ledger: ledger)
        try ledger.check("releases")
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// One JSON line, as the other benchmarks print them; each value is JSON already.
    func emit(_ benchmark: String, _ fields: [(String, String)]) {
        let pairs = [("benchmark", "\"\(benchmark)\"")] + fields
        print("{" + pairs.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
    }

    /// `text` as a JSON string.
    func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

extension WrkScripts {
    /// GETs the appcast as one licensed device; args: its `X-Keylight-Lease` header.
    static let appcast = threads + "\n" + """
    init = function(args)
      wrk.headers["X-Keylight-Lease"] = args[1]
    end
    """ + "\n" + report
}

/// The releases benchmark's catalogue, made through the admin and SDK APIs as a developer and an
/// app make it: tenant `bench`, product `app` (a licensed feed) with one activated device and
/// small releases, and product `files` (a public feed) with the large artifact.
struct ReleaseSeeder: Sendable {
    let base: String

    static let adminHeaders = [("Authorization", "Bearer bench-token")]

    /// A device of product `app`, as validate and the appcast see it.
    struct Device: Sendable {
        var sdkKey: String
        /// `<license key> <instance id>`: the validate script's file, of this one device.
        var pairs: URL
        /// `X-Keylight-Lease`: base64url of the lease's JSON, as the SDK sends it.
        var leaseHeader: String
    }

    /// The large artifact, published in the public feed of product `files`.
    struct LargeArtifact: Sendable {
        var length: Int64
        /// Its download path on the server.
        var path: String
        /// Its file under the artifacts folder (`ab/abcdef…`), which nginx serves.
        var storedPath: String
    }

    /// Product `app` and a device that activated a license of it.
    func licensedDevice(directory: URL) async throws -> Device {
        _ = try await json("POST", "/admin/v1/tenants", #"{"id":"bench","name":"Bench"}"#)
        let product = try await json("POST", "/admin/v1/tenants/bench/products", #"{"id":"app","name":"App","key_prefix":"BNCH","trial_duration_days":14,"free_tier_enabled":true}"#)
        guard let sdkKey = product["sdk_key"] as? String else { throw BenchError("no sdk key: \(product)") }
        // No duration and no update window: the license covers every release, so the device's
        // appcast lists each one with a download link of its own (the most work per request).
        _ = try await json("POST", "/admin/v1/tenants/bench/products/app/key-types", #"{"id":"pro","display_name":"Pro","activation_limit":100000,"duration_days":null,"fallback_access":true,"entitlements":["pro"]}"#)
        let license = try await json("POST", "/admin/v1/tenants/bench/products/app/licenses", #"{"key_type_id":"pro"}"#)
        guard let key = license["license_key"] as? String else { throw BenchError("no license key: \(license)") }
        let activation = try await json(
            "POST", "/bench/app/activate", #"{"license_key":"\#(key)","instance_name":"bench","machine_hash":"releases-bench"}"#,
            headers: [("X-Keylight-SDK-Key", sdkKey)]
        )
        guard let instance = activation["instance_id"] as? String, let leaseObject = activation["lease"] else {
            throw BenchError("activation failed: \(activation)")
        }
        let lease = try Lease(json: JSONSerialization.data(withJSONObject: leaseObject))
        let pairs = directory.appendingPathComponent("device-pairs.txt")
        try Data("\(key) \(instance)\n".utf8).write(to: pairs)
        return Device(sdkKey: sdkKey, pairs: pairs, leaseHeader: Base64.encodeURLSafe(lease.json()))
    }

    /// How many of the newest small releases raise the minimum macOS: Sparkle might have to pass
    /// each of them over on an older Mac, so the feed lists them all and the newest build before
    /// them (``expectedItems(_:)``), as a product that keeps dropping old systems has it.
    static let conditionedReleases = 10

    /// The items a device's appcast lists for `count` small releases.
    static func expectedItems(_ count: Int) -> Int { min(count, conditionedReleases + 1) }

    /// `count` published releases of `app`, an hour apart up to now, each with a 4 KiB zip.
    func publishSmallReleases(_ count: Int) async throws {
        let now = Int64(Date().timeIntervalSince1970)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 1...count {
                // A few at a time: each upload is synced to disk, and those syncs overlap.
                if index > 8 { _ = try await group.next() }
                group.addTask {
                    let raised = index - (count - Self.conditionedReleases)
                    let id = try await createRelease(
                        product: "app", version: "\(index)", releasedAt: now - Int64(count - index) * 3_600, minSystem: raised > 0 ? "11.\(raised)" : nil
                    )
                    let (status, body) = try await send(
                        "PUT", Self.artifactPath(product: "app", release: id),
                        headers: Self.adminHeaders + [("Content-Type", "application/octet-stream")], body: ByteBuffer(bytes: Self.zipBytes(length: 4_096))
                    )
                    guard status == 201 else { throw BenchError("upload to \(id): \(status) \(String(buffer: body))") }
                    _ = try await json("POST", "/admin/v1/tenants/bench/products/app/releases/\(id)/publish", "{}")
                }
            }
            try await group.waitForAll()
        }
    }

    /// Product `files` with a public feed, and one published release whose Mac file is
    /// `megabytes` MiB, uploaded as a stream from disk.
    func publishLargeRelease(megabytes: Int, directory: URL) async throws -> LargeArtifact {
        _ = try await json("POST", "/admin/v1/tenants/bench/products", #"{"id":"files","name":"Files","key_prefix":"FILE","trial_duration_days":14,"free_tier_enabled":true}"#)
        // A public feed (a trial's or the free tier's): its files need neither lease nor token,
        // so curl and nginx fetch the same plain URL shape.
        _ = try await json("PATCH", "/admin/v1/tenants/bench/products/files", #"{"public_feed":true}"#)
        let id = try await createRelease(product: "files", version: "1", releasedAt: Int64(Date().timeIntervalSince1970))
        let file = directory.appendingPathComponent("large-upload.zip")
        try Self.writeZip(at: file, megabytes: megabytes)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, body) = try await Curl.upload(
            file.path, to: base + Self.artifactPath(product: "files", release: id),
            headers: ["Authorization: Bearer bench-token", "Content-Type: application/octet-stream"], maxSeconds: 600
        )
        guard status == 201, let artifact = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any],
              let sha256 = artifact["sha256"] as? String, sha256.utf8.count == 64, let fileName = artifact["file_name"] as? String else {
            throw BenchError("large upload: \(status) \(body)")
        }
        _ = try await json("POST", "/admin/v1/tenants/bench/products/files/releases/\(id)/publish", "{}")
        return LargeArtifact(
            length: Int64(megabytes) << 20, path: "/bench/files/downloads/\(id)/darwin/universal/\(fileName)", storedPath: "\(sha256.prefix(2))/\(sha256)"
        )
    }

    /// A draft release of `product`; answers its id.
    func createRelease(product: String, version: String, releasedAt: Int64, minSystem: String? = nil) async throws -> String {
        let minimum = minSystem.map { #","min_system_version":"\#($0)""# } ?? ""
        let release = try await json(
            "POST", "/admin/v1/tenants/bench/products/\(product)/releases",
            #"{"version":"\#(version)","short_version":"1.\#(version)","released_at":\#(releasedAt)\#(minimum),"notes_markdown":"Faster sync and **fewer** crashes in 1.\#(version).\n\n- one\n- two"}"#
        )
        guard let id = release["id"] as? String else { throw BenchError("no release id: \(release)") }
        return id
    }

    static func artifactPath(product: String, release: String) -> String {
        "/admin/v1/tenants/bench/products/\(product)/releases/\(release)/artifacts?platform=darwin&arch=universal"
    }

    /// A call that must succeed (2xx); answers its JSON object.
    func json(_ method: String, _ path: String, _ json: String, headers: [(String, String)] = ReleaseSeeder.adminHeaders) async throws -> [String: Any] {
        let (status, body) = try await send(method, path, headers: headers + [("Content-Type", "application/json")], body: ByteBuffer(string: json))
        guard (200..<300).contains(status) else { throw BenchError("\(method) \(path): \(status) \(String(buffer: body))") }
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }

    func send(_ method: String, _ path: String, headers: [(String, String)], body: ByteBuffer? = nil) async throws -> (status: UInt, body: ByteBuffer) {
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let received = try await response.body.collect(upTo: 16 << 20)
        return (response.status.code, received)
    }

    /// `length` bytes that read as a zip (a local file header's signature first: the server
    /// tells a file's type by its bytes), the rest random, so no two files share a hash.
    static func zipBytes(length: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length + 8)
        while bytes.count < length {
            let word: UInt64 = generator.next()
            withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) }
        }
        bytes.removeLast(bytes.count - length)
        bytes.replaceSubrange(0..<4, with: [0x50, 0x4B, 0x03, 0x04])
        return bytes
    }

    /// A `megabytes` MiB zip on disk: one random MiB written over and over (only its head tells
    /// the server what it is, and nothing on the way compresses it).
    static func writeZip(at url: URL, megabytes: Int) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw BenchError("cannot create \(url.path)") }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let chunk = Data(zipBytes(length: 1 << 20))
        for _ in 0..<megabytes { try handle.write(contentsOf: chunk) }
    }
}
