import Foundation
import KeylightTestSupport
import KeylightCore
import Testing

/// The hosted service's published lease vectors, read from `../shared/conformance` as given.
@Suite("Lease conformance vectors (needs ../shared/conformance)", .enabled(if: PrerequisiteGate.enabled(Shared.hasLeaseVectors), "../shared is absent"), .timeLimit(.minutes(3)))
struct ConformanceVectorTests {
    struct VectorFile: Decodable {
        var version: Int
        var skewSeconds: Int64
        var vectors: [Vector]
    }

    struct Vector: Decodable {
        var name: String
        var lease: Lease
        var trustedKeys: [String: String]
        var now: Int64
        var expect: LeaseVerification
    }

    static func load() throws -> VectorFile {
        try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: Shared.leaseVectors))
    }

    @Test func fileHasEightVectorsAndTheProtocolSkew() throws {
        let file = try Self.load()
        #expect(file.vectors.count == 8)
        #expect(file.skewSeconds == Lease.expirySkew)
    }

    // Without the file the suite is disabled; the names must still evaluate without throwing.
    @Test(arguments: (try? load().vectors.map(\.name)) ?? [])
    func vector(named name: String) throws {
        let vector = try #require(try Self.load().vectors.first { $0.name == name })
        let keysJSON = try JSONEncoder().encode(vector.trustedKeys)
        let keyset = try Keyset(json: keysJSON)
        let result = vector.lease.verify(with: keyset, now: vector.now)
        #expect(result == vector.expect, "vector \(name)")
    }

    @Test func vectorsVerifyWithUrlSafeUnpaddedSignatures() throws {
        for vector in try Self.load().vectors {
            var lease = vector.lease
            lease.signature = lease.signature
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            let keyset = try Keyset(json: JSONEncoder().encode(vector.trustedKeys))
            #expect(lease.verify(with: keyset, now: vector.now) == vector.expect, "vector \(vector.name)")
        }
    }
}
