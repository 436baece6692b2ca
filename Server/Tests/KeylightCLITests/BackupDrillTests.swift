import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightTestSupport
import NIOConcurrencyHelpers
import Testing

/// Backups as an operator runs them: taken while the server takes writes, checked, restored
/// after the machine is lost, and a server started on the restore.
@Suite(.serialized, .timeLimit(.minutes(6))) struct BackupDrillTests {
    static let masterKey = [UInt8](repeating: 9, count: 32)
    static let environment = ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode(masterKey)]
    static let limits = ["--rate-limit-address", "0", "--rate-limit-license", "0"]

    /// A master key file as an operator keeps it (0600).
    static func keyFile(_ key: [UInt8], in directory: URL, name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try SecretFile.write(Data((Base64.encode(key) + "\n").utf8), to: path)
        return path
    }

    /// The drill: concurrent activations, a backup mid-load, SIGKILL, restore into a new path,
    /// a server on it, and every activation acknowledged before the backup began validates.
    @Test func backupMidLoadKillRestoreAndEveryEarlierActivationValidates() async throws {
        let directory = try temporaryDirectory()
        let database = directory.appendingPathComponent("live.sqlite").path
        let backup = directory.appendingPathComponent("backups/drill.sqlite").path
        try FileManager.default.createDirectory(atPath: directory.appendingPathComponent("backups").path, withIntermediateDirectories: true)
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: database, environment: Self.environment, arguments: Self.limits)
        let (sdkKey, key, _) = try await server.seedLicense(token: "t")
        let keysetBefore = try await Self.bytes(server, "/acme/.well-known/keylight-keys")

        struct Acknowledged: Sendable { let instance: String; let machine: String; let at: ContinuousClock.Instant }
        let answered = NIOLockedValueBox(0)
        let backupStarted = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
        let backupResult = NIOLockedValueBox<CLI.Result?>(nil)
        let acknowledged = try await withThrowingTaskGroup(of: Acknowledged?.self) { group in
            for index in 0..<240 {
                group.addTask {
                    let machine = "drill-\(index)"
                    let reply = try? await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"\#(machine)"}"#, timeout: .seconds(10), using: http)
                    guard reply?.status == 200, let id = reply?.body["instance_id"] as? String else { return nil }
                    let now = ContinuousClock.now
                    if answered.withLockedValue({ $0 += 1; return $0 }) == 60 {
                        // Mid-load: the backup runs while the other activations keep committing.
                        backupStarted.withLockedValue { $0 = ContinuousClock.now }
                        let result = try await CLI.run(["backup", "--db", database, "--to", backup])
                        backupResult.withLockedValue { $0 = result }
                    }
                    return Acknowledged(instance: id, machine: machine, at: now)
                }
            }
            return try await group.reduce(into: [Acknowledged]()) { if let item = $1 { $0.append(item) } }
        }
        let started = try #require(backupStarted.withLockedValue { $0 })
        let result = try #require(backupResult.withLockedValue { $0 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(SecretFile.permissions(of: backup) == 0o600)
        let before = acknowledged.filter { $0.at < started }
        #expect(before.count >= 60)
        // The machine is lost: no graceful anything.
        _ = kill(server.process.processIdentifier, SIGKILL)
        try #require(try await CrashTests.exits(server.process, within: .seconds(10)))

        // A wrong master key is refused and writes nothing.
        let restored = directory.appendingPathComponent("restored/keylight.sqlite").path
        try FileManager.default.createDirectory(atPath: directory.appendingPathComponent("restored").path, withIntermediateDirectories: true)
        let wrongKey = try Self.keyFile([UInt8](repeating: 1, count: 32), in: directory, name: "wrong.key")
        let refused = try await CLI.run(["restore", "--from", backup, "--db", restored, "--master-key-file", wrongKey])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("the master key does not open the backup's sealed keys"))
        #expect(!FileManager.default.fileExists(atPath: restored))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("restored").path).isEmpty)

        let rightKey = try Self.keyFile(Self.masterKey, in: directory, name: "master.key")
        let restore = try await CLI.run(["restore", "--from", backup, "--db", restored, "--master-key-file", rightKey])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(SecretFile.permissions(of: restored) == 0o600)
        let again = try await CLI.run(["restore", "--from", backup, "--db", restored, "--master-key-file", rightKey])
        #expect(again.status == 2 && again.stderr.contains("--force"))

        let revived = try await ServerProcess(database: restored, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"], arguments: Self.limits + ["--master-key-file", rightKey])
        let keysetAfter = try await Self.bytes(revived, "/acme/.well-known/keylight-keys")
        #expect(keysetAfter.count > 50)
        #expect(keysetAfter == keysetBefore, "the tenant's keyset differs after restore")
        var lost: [String] = []
        for item in before {
            let reply = try await revived.request(.POST, "/acme/app/validate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                  json: #"{"license_key":"\#(key)","instance_id":"\#(item.instance)","machine_hash":"\#(item.machine)"}"#, using: http)
            if reply.status != 200 || reply.body["valid"] as? Bool != true { lost.append(item.instance) }
        }
        #expect(lost.isEmpty, "acknowledged before the backup began, missing after restore: \(lost.count) of \(before.count)")
        #expect(await revived.terminate() == 0)
    }

    @Test func backupVerifyAndRestoreRefuseWhatTheyShould() async throws {
        let directory = try temporaryDirectory()
        // No database at --db, and --to and --verify together or neither.
        let missing = try await CLI.run(["backup", "--db", directory.appendingPathComponent("none.sqlite").path, "--to", directory.appendingPathComponent("b.sqlite").path])
        #expect(missing.status == 2 && missing.stderr.contains("no such database"))
        #expect(try await CLI.run(["backup", "--to", "x", "--verify", "y"]).status != 0)
        #expect(try await CLI.run(["backup"]).status != 0)

        // A file that is not a database is not a backup; verify changes nothing and leaves nothing beside it.
        let junk = directory.appendingPathComponent("junk.sqlite")
        try Data("not a database at all, only some bytes".utf8).write(to: junk)
        let verifyJunk = try await CLI.run(["backup", "--verify", junk.path])
        #expect(verifyJunk.status == 2 && verifyJunk.stderr.contains("not a usable backup"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["junk.sqlite"])

        // A real one: its summary, and backing up over it needs --force.
        let database = directory.appendingPathComponent("live.sqlite").path
        let server = try await ServerProcess(database: database, environment: Self.environment, arguments: Self.limits)
        _ = try await server.seedLicense(token: "t")
        let backup = directory.appendingPathComponent("one.sqlite").path
        let made = try await CLI.run(["backup", "--db", database, "--to", backup])
        #expect(made.status == 0, "\(made.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])
        #expect(summary["integrity"] as? String == "ok")
        #expect((summary["counts"] as? [String: Int])?["licenses"] == 1)
        #expect((summary["counts"] as? [String: Int])?["tenant_signing_keys"] == 1)
        #expect((summary["schema"] as? String)?.isEmpty == false)
        let verified = try await CLI.run(["backup", "--verify", backup])
        #expect(verified.status == 0 && verified.stdout == made.stdout)
        let over = try await CLI.run(["backup", "--db", database, "--to", backup])
        #expect(over.status == 2 && over.stderr.contains("--force"))
        #expect(try await CLI.run(["backup", "--db", database, "--to", backup, "--force"]).status == 0)
        // A master key file that is not there is never made by restore.
        let noKey = try await CLI.run(["restore", "--from", backup, "--db", directory.appendingPathComponent("r.sqlite").path, "--master-key-file", directory.appendingPathComponent("absent.key").path])
        #expect(noKey.status == 2 && noKey.stderr.contains("no master key there"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("absent.key").path))
        // Replacing a database also drops its write-ahead log, which SQLite would otherwise replay.
        let key = try Self.keyFile(Self.masterKey, in: directory, name: "master.key")
        #expect(await server.terminate() == 0)
        let target = directory.appendingPathComponent("target.sqlite").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        try Data("stale log".utf8).write(to: URL(fileURLWithPath: target + "-wal"))
        let forced = try await CLI.run(["restore", "--from", backup, "--db", target, "--master-key-file", key, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target + "-wal"))
        #expect(try await CLI.run(["backup", "--verify", target]).status == 0)
    }

    /// `serve --backup-dir`: a backup at start, kept to --backup-keep, none with PostgreSQL.
    @Test func scheduledBackupsOfServe() async throws {
        let directory = try temporaryDirectory()
        let backups = directory.appendingPathComponent("backups").path
        let server = try await ServerProcess(database: directory.appendingPathComponent("live.sqlite").path, environment: Self.environment,
                                             arguments: Self.limits + ["--backup-dir", backups, "--backup-every", "1m", "--backup-keep", "2"])
        var files: [String] = []
        for _ in 0..<100 where files.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            files = (try? FileManager.default.contentsOfDirectory(atPath: backups).filter { $0.hasSuffix(".sqlite") }) ?? []
        }
        #expect(files.count == 1 && files[0].hasPrefix("keylight-"))
        #expect(SecretFile.permissions(of: backups) == 0o700)
        let verified = try await CLI.run(["backup", "--verify", backups + "/" + files[0]])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(await server.terminate() == 0)
        let refused = try await CLI.run(["serve", "--database-url", "postgres://u@127.0.0.1:1/x", "--backup-dir", backups])
        #expect(refused.status == 64 && refused.stderr.contains("pg_dump"))
        let tooOften = try await CLI.run(["serve", "--backup-dir", backups, "--backup-every", "10s"])
        #expect(tooOften.status == 64)
    }

    /// The PostgreSQL equivalent docs/operating/backups.md shows: pg_dump of a live database, pg_restore into a
    /// new one, a server on it with the same master key, and the license validates.
    @Test func postgresDumpRestoresAndValidates() async throws {
        guard ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil else {
            try PrerequisiteGate.missing("KEYLIGHT_TEST_POSTGRES_URL (a PostgreSQL server)")
            return
        }
        let bin = ProcessInfo.processInfo.environment["KEYLIGHT_TEST_PG_BIN"].map { $0 + "/" } ?? ""
        guard FileManager.default.isExecutableFile(atPath: bin + "pg_dump") || bin.isEmpty else {
            try PrerequisiteGate.missing("pg_dump and pg_restore (KEYLIGHT_TEST_PG_BIN)")
            return
        }
        let directory = try temporaryDirectory()
        let source = try await MultiProcessTests.freshDatabase()
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: directory.appendingPathComponent("unused.sqlite").path, environment: Self.environment,
                                             arguments: Self.limits + ["--database-url", source])
        let (sdkKey, key, _) = try await server.seedLicense(token: "t")
        let activation = try await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                  json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"pg-1"}"#, using: http)
        let instance = try #require(activation.body["instance_id"] as? String)
        let keyset = try await Self.bytes(server, "/acme/.well-known/keylight-keys")

        let dump = directory.appendingPathComponent("keylight.dump").path
        let dumped = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), [bin + "pg_dump", "--format=custom", "--file", dump, source], limit: .seconds(60))
        #expect(dumped.status == 0, "\(String(decoding: dumped.stderr, as: UTF8.self))")
        #expect(await server.terminate() == 0)
        let target = try await MultiProcessTests.freshDatabase()
        let restored = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), [bin + "pg_restore", "--no-owner", "--dbname", target, dump], limit: .seconds(60))
        #expect(restored.status == 0, "\(String(decoding: restored.stderr, as: UTF8.self))")

        let revived = try await ServerProcess(database: directory.appendingPathComponent("unused2.sqlite").path, environment: Self.environment,
                                              arguments: Self.limits + ["--database-url", target])
        let validated = try await revived.request(.POST, "/acme/app/validate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                  json: #"{"license_key":"\#(key)","instance_id":"\#(instance)","machine_hash":"pg-1"}"#, using: http)
        #expect(validated.status == 200 && validated.body["valid"] as? Bool == true)
        #expect(try await Self.bytes(revived, "/acme/.well-known/keylight-keys") == keyset)
        #expect(await revived.terminate() == 0)
    }

    /// A response body exactly as sent.
    static func bytes(_ server: ServerProcess, _ path: String) async throws -> [UInt8] {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(server.port)\(path)"), timeout: .seconds(10))
        #expect(response.status == .ok)
        return Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
    }
}
