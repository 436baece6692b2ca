import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import KeylightCore
import NIOConcurrencyHelpers
import KeylightServerTestSupport
import Testing

/// `keylight serve` killed without warning, and shut down while its database misbehaves.
@Suite(.serialized, .timeLimit(.minutes(6))) struct CrashTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    static let environment = ["KEYLIGHT_ADMIN_TOKEN": "t", "KEYLIGHT_MASTER_KEY": Base64.encode([UInt8](repeating: 7, count: 32))]
    static let auth = [("Authorization", "Bearer t")]

    /// Where a server of `backend` keeps its data: the arguments and SQLite path to start it with.
    static func storage(_ backend: Backend) async throws -> (database: String, arguments: [String]) {
        let sqlite = try temporaryDirectory().appendingPathComponent("crash.sqlite").path
        let limits = ["--rate-limit-address", "0", "--rate-limit-license", "0"]
        switch backend {
        case .sqlite:
            return (sqlite, limits)
        case .postgres:
            guard ProcessInfo.processInfo.environment["KEYLIGHT_TEST_POSTGRES_URL"] != nil else {
                try PrerequisiteGate.missing("KEYLIGHT_TEST_POSTGRES_URL (a PostgreSQL server)")
                return (sqlite, limits)
            }
            return (sqlite, ["--database-url", try await MultiProcessTests.freshDatabase()] + limits)
        }
    }

    @Test(arguments: Backend.allCases)
    func killNineLosesNoAcknowledgedActivation(backend: Backend) async throws {
        let (database, arguments) = try await Self.storage(backend)
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: database, environment: Self.environment, arguments: arguments)
        let (sdkKey, key, licenseId) = try await server.seedLicense(token: "t")

        // SIGKILL when the 25th activation is answered: no flush, no shutdown, nothing but what was committed.
        let answered = NIOLockedValueBox(0)
        let acknowledged = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let reply = try? await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"m\#(index)"}"#, timeout: .seconds(5), using: http)
                    guard reply?.status == 200, let id = reply?.body["instance_id"] as? String else { return nil }
                    if answered.withLockedValue({ $0 += 1; return $0 }) == 25 { _ = kill(server.process.processIdentifier, SIGKILL) }
                    return id
                }
            }
            return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
        }
        // On a loaded machine fewer than 25 may be answered within their 5 s: the kill then comes
        // when the requests are done, and what was acknowledged must still all be there.
        if answered.withLockedValue({ $0 }) < 25 { _ = kill(server.process.processIdentifier, SIGKILL) }
        try #require(try await Self.exits(server.process, within: .seconds(10)))
        #expect(server.process.terminationReason == .uncaughtSignal && server.process.terminationStatus == SIGKILL)
        #expect(!acknowledged.isEmpty)

        let restarted = try await ServerProcess(database: database, environment: Self.environment, arguments: arguments)
        let detail = try await restarted.request(.GET, "/admin/v1/tenants/acme/products/app/licenses/\(licenseId)", headers: Self.auth, using: http)
        let stored = Set(((detail.body["instances"] as? [[String: Any]]) ?? []).compactMap { $0["instance_id"] as? String })
        #expect(Set(acknowledged).isSubset(of: stored), "acknowledged but lost: \(Set(acknowledged).subtracting(stored).count)")
        #expect(detail.body["active_instances"] as? Int == stored.count)
        #expect(await restarted.terminate() == 0)
    }

    /// Polls until `process` has exited (Foundation's `waitUntilExit` can miss the exit when called
    /// from a concurrency thread); false after `limit`.
    static func exits(_ process: Process, within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        return !process.isRunning
    }

    /// Runs `command` with /bin/sh and answers its exit status (nil if still running after `limit`).
    /// posix_spawn and waitpid on its pid: Foundation's Process missed the exit of this short-lived
    /// child (isRunning stayed true after it had been reaped).
    ///
    /// The child gets standard input, output and error only. NIO accepts sockets without
    /// close-on-exec, so a plain spawn handed every open connection of this process to the child;
    /// `pg_ctl restart` then passed them to the PostgreSQL server it started, which kept them open
    /// for the rest of the run, and a socket the test server had closed never reached its peer
    /// (HardeningTests' stalled body stayed connected for 40 s in one full run in three).
    static func shell(_ command: String, within limit: Duration) async throws -> Int32? {
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else { return nil }
        defer { posix_spawn_file_actions_destroy(&actions) }
        try closeInheritedDescriptors(&actions)
        guard posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ) == 0 else { return nil }
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < deadline else { kill(pid, SIGKILL); return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        return (status >> 8) & 0xFF
    }

    /// Adds "close every descriptor from 3 up" to `actions`: glibc's closefrom action (2.34 and
    /// later, what Debian 12 ships). The Swift overlay does not declare it, so it is looked up; a C
    /// library without it is an error, not a spawn that leaks.
    static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) throws {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, CInt) -> CInt
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw SpawnError(what: "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        guard unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3) == 0 else {
            throw SpawnError(what: "posix_spawn_file_actions_addclosefrom_np failed")
        }
    }

    struct SpawnError: Error { var what: String }

    /// The restart's shell gets no descriptor of this process: a socket opened without
    /// close-on-exec (as NIO accepts them) is not open in the child.
    @Test func theRestartShellInheritsNoDescriptor() async throws {
        let socket = Glibc.socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
        try #require(socket > 2)
        defer { close(socket) }
        #expect(fcntl(socket, F_GETFD) & FD_CLOEXEC == 0)
        // The shell's own descriptor table: 0 when the socket is not there.
        #expect(try await Self.shell("[ ! -e /proc/$$/fd/\(socket) ]", within: .seconds(20)) == 0)
        #expect(try await Self.shell("[ -e /proc/$$/fd/1 ]", within: .seconds(20)) == 0)
    }

    /// PostgreSQL restarted under load, three times, then SIGTERM: the server answers after each
    /// restart, and the process exits within its shutdown bound (it used to wait forever on a
    /// query left pending on a killed connection).
    @Test func sigtermAfterPostgresRestartsMidLoadExitsInTime() async throws {
        let environment = ProcessInfo.processInfo.environment
        // A PostgreSQL server of its own: restarting the shared one would break the tests running beside this one.
        guard let restart = environment["KEYLIGHT_TEST_POSTGRES_RESTART"], environment["KEYLIGHT_TEST_POSTGRES_RESTARTABLE_URL"] != nil else {
            try PrerequisiteGate.missing("KEYLIGHT_TEST_POSTGRES_RESTARTABLE_URL and KEYLIGHT_TEST_POSTGRES_RESTART (a PostgreSQL server and a command that restarts it)")
            return
        }
        let database = try temporaryDirectory().appendingPathComponent("unused.sqlite").path
        let arguments = ["--database-url", try await MultiProcessTests.freshDatabase(on: "KEYLIGHT_TEST_POSTGRES_RESTARTABLE_URL"), "--rate-limit-address", "0", "--rate-limit-license", "0"]
        let http = HTTPClient.shared
        let server = try await ServerProcess(database: database, environment: Self.environment, arguments: arguments + ["--shutdown-timeout", "5"])
        let (sdkKey, key, _) = try await server.seedLicense(token: "t")
        // Load: activations in flight before, during and after the database restarts, until
        // cancelled. Progress is counted in answers, not guessed with sleeps; the slowest answer
        // is kept (a connection left leased by a restart made later requests wait the pool's
        // full 10 s, then time out, until no request was answered at all).
        let answered = NIOLockedValueBox(0)
        let slowest = NIOLockedValueBox(Duration.zero)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var index = 0
                        while !Task.isCancelled {
                            index += 1
                            let started = ContinuousClock.now
                            if (try? await server.request(.POST, "/acme/app/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                                          json: #"{"license_key":"\#(key)","instance_name":"n","machine_hash":"r\#(worker)-\#(index)"}"#, timeout: .seconds(20), using: http)) != nil {
                                let took = ContinuousClock.now - started
                                answered.withLockedValue { $0 += 1 }
                                slowest.withLockedValue { $0 = max($0, took) }
                            }
                        }
                    }
                }
            }
        }
        #expect(try await eventually(timeout: .seconds(30)) { answered.withLockedValue { $0 } >= 20 }, "the load was not being answered before the restart")
        // Three restarts, each followed by answers: the server recovers every time, on the
        // restarted database or failing fast while it is down.
        for round in 1...3 {
            #expect(try await Self.shell(restart, within: .seconds(60)) == 0, "the restart command failed or did not finish")
            let afterRestart = answered.withLockedValue { $0 }
            #expect(try await eventually(timeout: .seconds(30)) { answered.withLockedValue { $0 } >= afterRestart + 20 }, "no answers after restart \(round)")
        }
        #expect(slowest.withLockedValue { $0 } < .seconds(8), "an answer took \(slowest.withLockedValue { $0 })")
        let signalled = ContinuousClock.now
        kill(server.process.processIdentifier, SIGTERM)
        while server.process.isRunning, ContinuousClock.now - signalled < .seconds(30) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let took = ContinuousClock.now - signalled
        #expect(!server.process.isRunning, "still running 30 s after SIGTERM")
        if server.process.isRunning { kill(server.process.processIdentifier, SIGKILL) }
        // 5 s of graceful shutdown, then 5 s more at most before the watchdog ends it.
        #expect(took < .seconds(12), "exited after \(took)")
        load.cancel()
        _ = await load.value
    }
}
