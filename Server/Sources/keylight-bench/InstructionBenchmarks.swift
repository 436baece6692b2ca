import ArgumentParser
import AsyncHTTPClient
import Foundation
import KeylightCore
import KeylightServer
import Logging
import NIOCore

/// Instructions the server executes per request, which neither load nor the rest of the machine
/// changes (issue 52): a server process (`serve-child`, from a copy of this binary without debug
/// information, which valgrind 3.19 cannot read) runs under callgrind with instrumentation off;
/// for `/healthz`, validate and activate in turn, `--warmup` requests are sent, instrumentation
/// is switched on (`callgrind_control --instr=on`, through valgrind's gdbserver), the counters
/// are emptied with a dump, `--requests` requests are sent, and a second dump holds their
/// instructions (callgrind's `Ir`). One client, one keep-alive connection, one request at a
/// time; the client is this process, which callgrind does not see. `.ci/instruction-counts`
/// compares validate's and activate's figures with docs/PERFORMANCE.md.
struct InstructionBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "instructions",
        abstract: "Server instructions per request for /healthz, validate and activate, counted by callgrind (needs valgrind)."
    )

    @Option(help: "Requests counted per endpoint.")
    var requests = 2_000

    @Option(help: "Requests per endpoint before counting (not counted).")
    var warmup = 300

    @Option(help: "Licenses with an active instance (default: --warmup + --requests, each validated once while seeding; so no instance is validated twice in the count).")
    var licenses: Int?

    @Option(help: "Seconds to wait for the server to listen under valgrind.")
    var startSeconds = 300

    @Option(help: "Keep callgrind's dumps in this folder (for callgrind_annotate); default: a temporary folder, removed.")
    var profilesDir: String?

    func validate() throws {
        guard requests >= 1, warmup >= 0, (licenses ?? 1) >= 1, startSeconds >= 1 else {
            throw ValidationError("--requests, --licenses and --start-seconds must be at least 1, --warmup at least 0")
        }
    }

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keylight-bench-instructions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let profiles = profilesDir.map { URL(fileURLWithPath: $0) } ?? directory
        try FileManager.default.createDirectory(at: profiles, withIntermediateDirectories: true)
        _ = try await Tool.require(["valgrind", "--version"], package: "valgrind")
        _ = try await Tool.require(["callgrind_control", "--version"], package: "valgrind")
        // valgrind 3.19 cannot read the toolchain's DWARF 5: the server runs from a copy without it.
        let binary = directory.appendingPathComponent("keylight-bench-nodebug")
        _ = try await Tool.require(["strip", "--strip-debug", "-o", binary.path, ChildServer.executable.path], package: "binutils")

        var logger = Logger(label: "keylight-bench")
        logger.logLevel = .critical
        let path = directory.appendingPathComponent("instructions.sqlite").path
        let database = try await Database.sqlite(path: path, poolSize: 1, logger: logger)
        try await database.migrate(logger: logger)
        // Last-seen times written every flush, as before gathering: gathered, most of the times a
        // counted validate caused would be written after its window, and go uncounted.
        let child = try await ChildServer.start(
            ["--db", path, "--key", Base64.encode([UInt8](repeating: 5, count: 32)), "--last-seen-gathering", "0"], executable: binary,
            wrapper: ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no", "--vgdb=yes", "--callgrind-out-file=\(profiles.path)/callgrind.%p"],
            waitSeconds: startSeconds
        )
        defer { child.stop() }
        let base = "http://127.0.0.1:\(child.port)"
        let seeded = try await Seeder.seed(base: base, licenses: licenses ?? (warmup + requests), database: database, directory: directory, name: "instructions")
        await database.close()
        let pairs = try String(contentsOf: seeded.pairs, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        guard !pairs.isEmpty, pairs.allSatisfy({ $0.count == 2 }) else { throw BenchError("instructions: unreadable \(seeded.pairs.path)") }
        let sdkKey = seeded.sdkKey
        // Validate reads instance `index` (each once, with the default --licenses); activate adds
        // a new machine to license `index` on every request.
        let legs: [(name: String, send: (Int) async throws -> UInt)] = [
            ("healthz", { _ in try await Self.send(base + "/healthz") }),
            ("validate", { index in
                let pair = pairs[index % pairs.count]
                return try await Self.send(base + "/bench/app/validate", sdkKey: sdkKey, body: #"{"license_key":"\#(pair[0])","instance_id":"\#(pair[1])"}"#)
            }),
            ("activate", { index in
                let pair = pairs[index % pairs.count]
                return try await Self.send(
                    base + "/bench/app/activate", sdkKey: sdkKey,
                    body: #"{"license_key":"\#(pair[0])","instance_name":"instructions","machine_hash":"instructions-\#(index)"}"#
                )
            }),
        ]
        let callgrind = Callgrind(pid: child.process.processIdentifier, profiles: profiles)
        var perRequest: [String: Double] = [:]
        for leg in legs {
            for index in 0..<warmup {
                let status = try await leg.send(index)
                try Self.check(leg.name, status)
            }
            try await callgrind.control(["--instr=on"])
            _ = try await callgrind.dump("\(leg.name)-start")
            for index in warmup..<(warmup + requests) {
                let status = try await leg.send(index)
                try Self.check(leg.name, status)
            }
            let instructions = try await callgrind.dump(leg.name)
            try await callgrind.control(["--instr=off"])
            perRequest[leg.name] = Double(instructions) / Double(requests)
            printJSONLine("instructions.\(leg.name)", [
                ("requests", "\(requests)"), ("instructions", "\(instructions)"),
                ("instructions_per_request", String(format: "%.0f", Double(instructions) / Double(requests))),
            ])
        }
        let healthzCount = max(perRequest["healthz"] ?? 0, 1)
        let validateCount = perRequest["validate"] ?? 0
        let activateCount = perRequest["activate"] ?? 0
        printJSONLine("instructions.per_request", [
            ("requests", "\(requests)"), ("warmup", "\(warmup)"), ("licenses", "\(pairs.count)"),
            ("healthz", String(format: "%.0f", healthzCount)), ("validate", String(format: "%.0f", validateCount)),
            ("activate", String(format: "%.0f", activateCount)),
            ("validate_ratio_to_healthz", String(format: "%.3f", validateCount / healthzCount)),
            ("activate_ratio_to_healthz", String(format: "%.3f", activateCount / healthzCount)),
        ])
    }

    /// One request on the shared client (one keep-alive connection, as requests go one at a
    /// time); answers the status once the whole answer is read. POST with a body, else GET.
    static func send(_ url: String, sdkKey: String? = nil, body: String? = nil) async throws -> UInt {
        var request = HTTPClientRequest(url: url)
        request.method = body == nil ? .GET : .POST
        if let sdkKey { request.headers.add(name: "X-Keylight-SDK-Key", value: sdkKey) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status.code
    }

    /// A request that was not answered 2xx ends the run: its instructions are not the ones named.
    static func check(_ name: String, _ status: UInt) throws {
        guard (200..<300).contains(status) else { throw BenchError("instructions: \(name) answered \(status)") }
    }
}

/// A server under callgrind, steered with callgrind_control (through valgrind's gdbserver; its
/// dumps go to `profiles` as `callgrind.<pid>.<n>`).
struct Callgrind {
    let pid: Int32
    let profiles: URL

    /// `callgrind_control <arguments> <pid>`. It exits 0 even when it finds no such process, so
    /// its output is read too.
    func control(_ arguments: [String]) async throws {
        let command = ["timeout", "120", "callgrind_control"] + arguments + ["\(pid)"]
        let (status, output) = try await Tool.run(command)
        guard status == 0, !output.contains("Error") else {
            throw BenchError("\(command.joined(separator: " ")) failed (exit \(status)): \(output)")
        }
    }

    /// Dumps what was counted since the last dump, labelled `label`, and answers its instructions.
    func dump(_ label: String) async throws -> Int {
        try await control(["--dump=\(label)"])
        // The dump is written before callgrind_control returns; a moment's grace all the same.
        for _ in 0..<50 {
            if let instructions = try instructions(dumped: label) { return instructions }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("callgrind: no dump labelled \(label) in \(profiles.path)")
    }

    /// The instructions (`Ir`, the first event) in the dump labelled `label`, nil before it is
    /// whole. Read from `totals:`, the file's last line: valgrind 3.19 writes a wrong `summary:`
    /// (the header's) in a dump made after instrumentation was switched off and on again.
    private func instructions(dumped label: String) throws -> Int? {
        let trigger = "\ndesc: Trigger: dump \(label)\n"
        for name in try FileManager.default.contentsOfDirectory(atPath: profiles.path) where name.hasPrefix("callgrind.\(pid).") {
            let file = profiles.appendingPathComponent(name)
            // The trigger is in the header; a dump holds every function's costs, so only the one
            // labelled is read whole.
            guard let handle = try? FileHandle(forReadingFrom: file) else { continue }
            let head = try? handle.read(upToCount: 4096)
            try? handle.close()
            guard let head, String(decoding: head, as: UTF8.self).contains(trigger) else { continue }
            guard let data = try? Data(contentsOf: file) else { return nil }
            let text = String(decoding: data, as: UTF8.self)
            guard let totals = text.range(of: "\ntotals: ", options: .backwards) else { return nil }
            let digits = text[totals.upperBound...].prefix { $0.isNumber }
            return Int(digits)
        }
        return nil
    }
}
