import AsyncHTTPClient
import Foundation
import KeylightFuzzSupport
import KeylightCore
@testable import KeylightServer
import NIOCore
import Testing

/// The activation cap under concurrency: in-process through the router, and over real HTTP.
@Suite(.timeLimit(.minutes(3))) struct ConcurrencyTests {
    static func databaseFile() throws -> String {
        let directory = try temporaryDirectory()
        return directory.appendingPathComponent("test.sqlite").path
    }

    @Test func twoHundredConcurrentActivationsOverHTTP() async throws {
        try await Harness(databasePath: try Self.databaseFile()).run(.live) { client in
            let seed = try await client.seed(limit: 3)
            let port = try #require(client.client.port)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let statuses: [Int]
            do {
                statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<200 {
                        group.addTask {
                            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/acme/app/activate")
                            request.method = .POST
                            request.headers.add(name: "X-Keylight-SDK-Key", value: seed.sdkKey)
                            request.headers.add(name: "Content-Type", value: "application/json")
                            request.body = .bytes(ByteBuffer(string: #"{"license_key":"\#(seed.licenseKey)","instance_name":"n","machine_hash":"m\#(index)"}"#))
                            let response = try await http.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 20)
                            return Int(response.status.code)
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
            #expect(statuses.filter { $0 == 200 }.count == 3)
            #expect(statuses.filter { $0 == 409 }.count == 197)
            #expect(try await client.count("SELECT COUNT(*) AS n FROM instances WHERE active") == 3)
        }
    }

    @Test func concurrentActivationsOfOneMachineShareOneInstance() async throws {
        try await Harness(databasePath: try Self.databaseFile()).run { client in
            let seed = try await client.seed(limit: 5)
            let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.activate(seed, machine: "same-machine")["instance_id"] as? String }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(ids.allSatisfy { $0 != nil })
            #expect(Set(ids.compactMap { $0 }).count == 1)
            #expect(try await client.count("SELECT active_instances AS n FROM licenses") == 1)
        }
    }
}
