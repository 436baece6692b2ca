import Foundation
import KeylightTestSupport
import KeylightCore
import KeylightSigning
import Testing

@Suite(.timeLimit(.minutes(6))) struct KeysCommandTests {
    @Test func generateWritesA0600KeyFile() async throws {
        let path = try temporaryDirectory().appendingPathComponent("k.json").path
        let result = try await CLI.run(["keys", "generate", "--kid", "k1", "--out", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(SecretFile.permissions(of: path) == 0o600)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: String])
        #expect(Set(object.keys) == ["kid", "private_key", "public_key"])
        #expect(object["kid"] == "k1")
        #expect(Base64.decode(object["private_key"]!)?.count == 32)
        #expect(Base64.decode(object["public_key"]!)?.count == 32)
        // stdout names the key but never prints the private half.
        #expect(result.stdout.contains(object["public_key"]!))
        #expect(!result.stdout.contains(object["private_key"]!))
        #expect(try SigningKey.load(from: path).kid == "k1")
    }

    @Test func generateRefusesToOverwriteWithoutForce() async throws {
        let path = try temporaryDirectory().appendingPathComponent("k.json").path
        try await CLI.run(["keys", "generate", "--out", path])
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try await CLI.run(["keys", "generate", "--out", path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("already exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try await CLI.run(["keys", "generate", "--out", path, "--force"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) != before)
    }

    @Test func badKidIsAnInputError() async throws {
        let path = try temporaryDirectory().appendingPathComponent("k.json").path
        let result = try await CLI.run(["keys", "generate", "--kid", "a|b", "--out", path])
        #expect(result.status == 2)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}

@Suite(.timeLimit(.minutes(6))) struct LicenseKeyCommandTests {
    @Test func generateHashAndMask() async throws {
        let generated = try await CLI.run(["license-key", "generate", "--prefix", "ACME"])
        #expect(generated.status == 0)
        let key = generated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(LicenseKey.isValid(key) && key.hasPrefix("ACME-"))
        let hash = try await CLI.run(["license-key", "hash", key.lowercased()])
        let expectedHash = try LicenseKey(key).keyHash
        #expect(hash.stdout == expectedHash + "\n")
        let mask = try await CLI.run(["license-key", "mask", key])
        #expect(mask.stdout == "ACME-····-····-····-\(key.suffix(4))\n")
    }

    @Test func generateManyGivesDistinctKeys() async throws {
        let result = try await CLI.run(["license-key", "generate", "--prefix", "AB12", "--count", "50"])
        let keys = result.stdout.split(separator: "\n").map(String.init)
        #expect(keys.count == 50 && Set(keys).count == 50)
        #expect(keys.allSatisfy(LicenseKey.isValid))
    }

    @Test func badInputExitsTwoWithOneLine() async throws {
        for arguments in [["license-key", "generate", "--prefix", "acme!"], ["license-key", "hash", "not_a_key!"], ["license-key", "hash", "ACME-1"]] {
            let result = try await CLI.run(arguments)
            #expect(result.status == 2)
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(result.stdout.isEmpty)
        }
    }
}

@Suite(.timeLimit(.minutes(6))) struct LeaseCommandTests {
    struct Fixture {
        var directory: URL
        var keyPath: String
        var keysetPath: String
        var key: SigningKey
        var licenseKey = "ACME-AB12-CD34-EF56-GH78"

        init() async throws {
            directory = try temporaryDirectory()
            keyPath = directory.appendingPathComponent("key.json").path
            #expect(try await CLI.run(["keys", "generate", "--kid", "k1", "--out", keyPath]).status == 0)
            key = try SigningKey.load(from: keyPath)
            keysetPath = directory.appendingPathComponent("keys.json").path
            try Data(#"{"k1":"\#(Base64.encode(key.publicKey.rawRepresentation))"}"#.utf8).write(to: URL(fileURLWithPath: keysetPath))
        }

        func write(_ text: String, to name: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    @Test func signProducesALeaseThatVerifies() async throws {
        let fixture = try await Fixture()
        let signed = try await CLI.run([
            "lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey.lowercased(),
            "--instance-id", "00000000-0000-4000-8000-000000000001", "--ttl", "3600", "--issued-at", "1781076246",
            "--entitlements", "pro,beta",
        ])
        #expect(signed.status == 0, "\(signed.stderr)")
        let lease = try Lease(json: Data(signed.stdout.utf8))
        #expect(lease.kid == "k1")
        #expect(lease.licenseKeyHash == (try LicenseKey(fixture.licenseKey).keyHash))
        #expect(lease.issuedAt == 1_781_076_246 && lease.expiresAt == 1_781_079_846)
        #expect(lease.status == .active && lease.entitlements == ["beta", "pro"])
        #expect(lease.verify(with: Keyset(["k1": fixture.key.publicKey]), now: 1_781_076_300).isCurrent)

        let leasePath = try fixture.write(signed.stdout, to: "lease.json")
        let verified = try await CLI.run(["lease", "verify", "--lease", leasePath, "--keys", fixture.keysetPath, "--now", "1781076300"])
        #expect(verified.status == 0)
        #expect(verified.stdout == #"{"kidKnown":true,"signatureValid":true,"expired":false}"# + "\n")
    }

    @Test func verifyExitsOneForExpiredUntrustedOrTampered() async throws {
        let fixture = try await Fixture()
        let signed = try await CLI.run([
            "lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey, "--instance-id", "i-1",
            "--ttl", "60", "--issued-at", "1000",
        ])
        let leasePath = try fixture.write(signed.stdout, to: "lease.json")
        let expired = try await CLI.run(["lease", "verify", "--lease", leasePath, "--keys", fixture.keysetPath, "--now", "1361"])
        #expect(expired.status == 1)
        #expect(expired.stdout == #"{"kidKnown":true,"signatureValid":true,"expired":true}"# + "\n")
        // 300 s of skew.
        #expect(try await CLI.run(["lease", "verify", "--lease", leasePath, "--keys", fixture.keysetPath, "--now", "1360"]).status == 0)

        let otherKeys = try fixture.write(#"{"k2":"\#(Base64.encode(fixture.key.publicKey.rawRepresentation))"}"#, to: "other.json")
        let unknown = try await CLI.run(["lease", "verify", "--lease", leasePath, "--keys", otherKeys, "--now", "1001"])
        #expect(unknown.status == 1)
        #expect(unknown.stdout == #"{"kidKnown":false,"signatureValid":false,"expired":false}"# + "\n")

        let tampered = try fixture.write(signed.stdout.replacingOccurrences(of: "\"instanceId\":\"i-1\"", with: "\"instanceId\":\"i-2\""), to: "t.json")
        let bad = try await CLI.run(["lease", "verify", "--lease", tampered, "--keys", fixture.keysetPath, "--now", "1001"])
        #expect(bad.status == 1)
        #expect(bad.stdout == #"{"kidKnown":true,"signatureValid":false,"expired":false}"# + "\n")
    }

    @Test func verifyReadsStdinAndResponseEnvelopesAndTheWellKnownKeyset() async throws {
        let fixture = try await Fixture()
        let signed = try await CLI.run([
            "lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey, "--instance-id", "i-1",
        ])
        let envelope = Data(#"{"valid":true,"lease":\#(signed.stdout)}"#.utf8)
        let wellKnown = try fixture.write(
            #"{"keys":[{"kid":"k1","public_key":"\#(Base64.encode(fixture.key.publicKey.rawRepresentation))","status":"active"}]}"#,
            to: "wk.json"
        )
        let result = try await CLI.run(["lease", "verify", "--lease", "-", "--keys", wellKnown], stdin: envelope)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""signatureValid":true"#))
    }

    @Test func unreadableInputExitsTwoWithOneLineAndNoTrace() async throws {
        let fixture = try await Fixture()
        let garbage = try fixture.write("{not json", to: "garbage.json")
        let cases: [[String]] = [
            ["lease", "verify", "--lease", fixture.directory.appendingPathComponent("missing.json").path, "--keys", fixture.keysetPath],
            ["lease", "verify", "--lease", garbage, "--keys", fixture.keysetPath],
            ["lease", "verify", "--lease", fixture.keysetPath, "--keys", garbage],
            ["lease", "sign", "--key", garbage, "--license-key", fixture.licenseKey, "--instance-id", "i"],
            ["lease", "sign", "--key", fixture.keyPath, "--license-key", "nope", "--instance-id", "i"],
            ["lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey, "--instance-id", "a|b"],
            ["lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey, "--instance-id", "i", "--status", "fallback", "--entitlements", "pro"],
        ]
        for arguments in cases {
            let result = try await CLI.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.hasPrefix("keylight: error: "), "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func fallbackAndExpiredLeasesSign() async throws {
        let fixture = try await Fixture()
        for status in ["fallback", "expired"] {
            let result = try await CLI.run([
                "lease", "sign", "--key", fixture.keyPath, "--license-key", fixture.licenseKey, "--instance-id", "i", "--status", status,
            ])
            #expect(result.status == 0)
            let lease = try Lease(json: Data(result.stdout.utf8))
            #expect(lease.status.rawValue == status && lease.entitlements.isEmpty)
        }
    }
}

@Suite("CLI against the conformance vectors (needs ../shared/conformance)", .enabled(if: PrerequisiteGate.enabled(Shared.hasLeaseVectors), "../shared is absent"), .timeLimit(.minutes(6)))
struct CLIConformanceTests {
    @Test func everyVectorGivesItsExpectedLineAndExitCode() async throws {
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Shared.leaseVectors)) as? [String: Any])
        let vectors = try #require(file["vectors"] as? [[String: Any]])
        #expect(vectors.count == 8)
        let directory = try temporaryDirectory()
        for vector in vectors {
            let name = vector["name"] as! String
            let leasePath = directory.appendingPathComponent("\(name).json")
            try JSONSerialization.data(withJSONObject: vector["lease"]!).write(to: leasePath)
            let trusted = vector["trustedKeys"] as! [String: String]
            // Both keyset shapes.
            let mapPath = directory.appendingPathComponent("\(name)-map.json")
            try JSONSerialization.data(withJSONObject: trusted).write(to: mapPath)
            let documentPath = directory.appendingPathComponent("\(name)-doc.json")
            let document = ["keys": trusted.map { ["kid": $0.key, "public_key": $0.value, "status": "active"] }]
            try JSONSerialization.data(withJSONObject: document).write(to: documentPath)

            let expect = vector["expect"] as! [String: Bool]
            let line = #"{"kidKnown":\#(expect["kidKnown"]!),"signatureValid":\#(expect["signatureValid"]!),"expired":\#(expect["expired"]!)}"# + "\n"
            let trusted0 = expect["kidKnown"]! && expect["signatureValid"]! && !expect["expired"]!
            for keys in [mapPath, documentPath] {
                let result = try await CLI.run(["lease", "verify", "--lease", leasePath.path, "--keys", keys.path, "--now", "\(vector["now"]!)"])
                #expect(result.stdout == line, "\(name)")
                #expect(result.status == (trusted0 ? 0 : 1), "\(name)")
            }
        }
    }
}
