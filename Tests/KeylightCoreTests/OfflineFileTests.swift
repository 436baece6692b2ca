import Crypto
import Foundation
@testable import KeylightCore
import KeylightSigning
import KeylightTestSupport
import Testing

/// The three offline files of protocol 6.4 (request, response, deactivation proof): their exact
/// envelope, and what their parsers do with hostile text.
@Suite(.timeLimit(.minutes(2))) struct OfflineFileTests {
    static let serverKey = try! SigningKey(kid: "k1", privateKey: Curve25519.Signing.PrivateKey())
    static let deviceKey = Curve25519.Signing.PrivateKey()

    static func request(machine: String = "machine-1") -> OfflineActivationRequest {
        OfflineActivationRequest(tenantId: "acme", productId: "app", machineHash: machine, instanceName: "Studio Mac", deviceKey: deviceKey.publicKey, createdAt: 1_790_000_000)
    }

    static func response(for request: OfflineActivationRequest = request(), keyHash: String = String(repeating: "a", count: 64)) throws -> OfflineActivationResponse {
        let lease = try Lease.sign(licenseKeyHash: keyHash, instanceId: "inst-1", issuedAt: 1_790_000_000, expiresAt: 1_821_536_000, status: .active, entitlements: ["pro"], with: serverKey)
        let config = ProductConfig(tenantId: "acme", productId: "app", trialDurationDays: 14, freeTierEnabled: false, issuedAt: 1_790_000_000, expiresAt: 1_821_536_000).signed(with: serverKey)
        return OfflineActivationResponse.make(request: request, instanceId: "inst-1", licenseExpiresAt: nil, lease: lease, config: config, key: serverKey)
    }

    /// The payload between the armor lines, decoded.
    static func payload(_ text: String) throws -> [String: Any] {
        let lines = text.split(separator: "\n").map(String.init)
        let body = lines.dropFirst().dropLast().joined()
        let data = try #require(Data(base64Encoded: body))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aRequestIsTheProtocolsEnvelopeAndFieldsAndRoundTrips() throws {
        let request = Self.request()
        let text = request.armored
        let lines = text.split(separator: "\n")
        #expect(lines.first == "-----BEGIN KEYLIGHT ACTIVATION REQUEST-----" && lines.last == "-----END KEYLIGHT ACTIVATION REQUEST-----")
        #expect(lines.dropFirst().dropLast().allSatisfy { $0.count <= 64 })
        let json = try Self.payload(text)
        #expect(Set(json.keys) == ["v", "tenant_id", "product_id", "machine_hash", "instance_name", "device_key", "created_at"])
        #expect(json["v"] as? Int == 1 && json["tenant_id"] as? String == "acme" && json["created_at"] as? Int == 1_790_000_000)
        #expect(Base64.decode(json["device_key"] as! String) == Self.deviceKey.publicKey.rawRepresentation)
        #expect(try OfflineActivationRequest(armored: text) == request)
        // Text around the block (an email) and quoting are ignored; CRLF line ends too.
        let quoted = "Hi, here it is:\r\n\r\n" + text.split(separator: "\n").map { "> " + $0 }.joined(separator: "\r\n") + "\r\nThanks"
        #expect(try OfflineActivationRequest(armored: quoted) == request)
        // Another armored block first (a signature, a certificate, another Keylight file): skipped.
        let pgp = "-----BEGIN PGP SIGNATURE-----\nabc\n-----END PGP SIGNATURE-----\n"
        let proof = try OfflineDeactivationProof.sign(instanceId: "i", issuedAt: 1, with: Self.deviceKey).armored
        #expect(try OfflineActivationRequest(armored: pgp + proof + text) == request)
    }

    @Test func aResponseCarriesTheLeaseAndConfigAndIsBoundToTheRequestingDevice() throws {
        let response = try Self.response()
        let text = response.armored
        #expect(text.hasPrefix("-----BEGIN KEYLIGHT ACTIVATION-----\n") && text.hasSuffix("-----END KEYLIGHT ACTIVATION-----\n"))
        let json = try Self.payload(text)
        #expect(json["v"] as? Int == 1 && json["instance_id"] as? String == "inst-1")
        #expect(json.keys.contains("license_expires_at") && json["license_expires_at"] is NSNull)
        let lease = try #require(json["lease"] as? [String: Any])
        #expect(Set(lease.keys) == ["kid", "licenseKeyHash", "instanceId", "issuedAt", "expiresAt", "status", "signature", "entitlements"])
        #expect((json["config"] as? [String: Any])?["kid"] as? String == "k1")
        let parsed = try OfflineActivationResponse(armored: text)
        #expect(parsed == response)
        let keyset = Keyset(["k1": Self.serverKey.publicKey])
        #expect(parsed.lease.verify(with: keyset, now: 1_790_000_100).isCurrent)
        #expect(parsed.isBound(to: "machine-1", deviceKey: Self.deviceKey.publicKey, keyset: keyset))
        // Another machine, another device key, an untrusted server key: not bound.
        #expect(!parsed.isBound(to: "machine-2", deviceKey: Self.deviceKey.publicKey, keyset: keyset))
        #expect(!parsed.isBound(to: "machine-1", deviceKey: Curve25519.Signing.PrivateKey().publicKey, keyset: keyset))
        #expect(!parsed.isBound(to: "machine-1", deviceKey: Self.deviceKey.publicKey, keyset: Keyset(["k1": Curve25519.Signing.PrivateKey().publicKey])))
        // The machine hash written into the file cannot be edited to another machine's.
        var edited = json
        edited["machine_hash"] = "machine-2"
        let editedText = ArmoredText.encode(try JSONSerialization.data(withJSONObject: edited), label: OfflineActivationResponse.label)
        #expect(!(try OfflineActivationResponse(armored: editedText)).isBound(to: "machine-2", deviceKey: Self.deviceKey.publicKey, keyset: keyset))
    }

    @Test func aProofVerifiesOnlyWithTheDeviceKeyAndForItsInstanceAndTime() throws {
        let proof = try OfflineDeactivationProof.sign(instanceId: "inst-1", issuedAt: 1_790_000_000, with: Self.deviceKey)
        let json = try Self.payload(proof.armored)
        #expect(Set(json.keys) == ["v", "instance_id", "issued_at", "signature"])
        let parsed = try OfflineDeactivationProof(armored: proof.armored)
        #expect(parsed == proof && parsed.isSigned(by: Self.deviceKey.publicKey))
        #expect(!parsed.isSigned(by: Curve25519.Signing.PrivateKey().publicKey))
        // The signed bytes are exactly the protocol's.
        #expect(Self.deviceKey.publicKey.isValidSignature(parsed.signature, for: Data("kl-deactivate|inst-1|1790000000".utf8)))
        var moved = parsed
        moved.instanceId = "inst-2"
        #expect(!moved.isSigned(by: Self.deviceKey.publicKey))
        moved = parsed
        moved.issuedAt += 1
        #expect(!moved.isSigned(by: Self.deviceKey.publicKey))
    }

    /// Each hostile input is refused with an error that names what is wrong.
    @Test(arguments: [
        ("", "BEGIN"),
        ("just some text", "BEGIN"),
        ("-----BEGIN KEYLIGHT ACTIVATION-----\nAAAA\n-----END KEYLIGHT ACTIVATION-----", "activation file, not a activation request file"),
        ("-----BEGIN KEYLIGHT DEACTIVATION-----\nAAAA\n-----END KEYLIGHT DEACTIVATION-----", "deactivation file"),
        ("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\neyJ2IjoxfQ==", "END"),
        ("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\n!!!!\n-----END KEYLIGHT ACTIVATION REQUEST-----", "base64"),
        ("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\n\n-----END KEYLIGHT ACTIVATION REQUEST-----", "base64"),
        ("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\naGVsbG8=\n-----END KEYLIGHT ACTIVATION REQUEST-----", "JSON"),
        ("-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\nWzFd\n-----END KEYLIGHT ACTIVATION REQUEST-----", "JSON"),
    ])
    func malformedRequestEnvelopesAreRefused(text: String, naming: String) {
        #expect(throws: OfflineFileError.self) { try OfflineActivationRequest(armored: text) }
        do {
            _ = try OfflineActivationRequest(armored: text)
        } catch {
            #expect(error.description.contains(naming), "\(error.description)")
        }
    }

    @Test func hostileFieldsOfARequestAreRefusedByName() throws {
        let good = try Self.payload(Self.request().armored)
        let cases: [(String, Any?, String)] = [
            ("v", 2, "Version 2"),
            ("v", "1", "v has the wrong type"),
            ("tenant_id", nil, "tenant_id is missing"),
            ("tenant_id", "a|b", "tenant_id is not an id"),
            ("product_id", String(repeating: "p", count: 65), "product_id is not an id"),
            ("machine_hash", "", "machine_hash is empty"),
            ("machine_hash", String(repeating: "m", count: 129), "machine_hash is longer"),
            ("instance_name", "Mac\u{0}", "instance_name contains control"),
            ("instance_name", 7, "instance_name has the wrong type"),
            ("device_key", "AAAA", "device_key is not a base64 Ed25519"),
            ("device_key", String(repeating: "A", count: 4_000), "device_key is not a base64 Ed25519"),
            ("created_at", -1, "created_at is not a Unix time"),
            ("created_at", Int64.max, "created_at is not a Unix time"),
            // Not an Int64 at all: Foundation's decoder reports these without the field's name.
            ("created_at", 1e30, "JSON object"),
            ("created_at", 1.5, "JSON object"),
        ]
        for (field, value, naming) in cases {
            var json = good
            json[field] = value
            let text = ArmoredText.encode(try JSONSerialization.data(withJSONObject: json), label: OfflineActivationRequest.label)
            do {
                _ = try OfflineActivationRequest(armored: text)
                Issue.record("\(field) = \(String(describing: value)) was accepted")
            } catch {
                #expect(error.description.contains(naming), "\(field): \(error.description)")
            }
        }
        // Larger than any real file: refused before it is decoded.
        let huge = "-----BEGIN KEYLIGHT ACTIVATION REQUEST-----\n" + String(repeating: "A", count: ArmoredText.maxBytes) + "\n-----END KEYLIGHT ACTIVATION REQUEST-----"
        #expect(throws: OfflineFileError.tooLarge(ArmoredText.maxBytes)) { try OfflineActivationRequest(armored: huge) }
    }

    @Test func hostileResponsesAndProofsAreRefused() throws {
        let good = try Self.payload(try Self.response().armored)
        let cases: [(String, Any?, String)] = [
            ("instance_id", "../etc", "instance_id is not an id"),
            ("license_expires_at", -5, "license_expires_at is not a Unix time"),
            ("lease", "x", "lease has the wrong type"),
            ("config", nil, "config is missing"),
            ("binding", "short", "binding is not a base64 Ed25519 signature"),
            ("instance_id", "inst-2", "does not match instance_id"),
        ]
        for (field, value, naming) in cases {
            var json = good
            json[field] = value
            let text = ArmoredText.encode(try JSONSerialization.data(withJSONObject: json), label: OfflineActivationResponse.label)
            do {
                _ = try OfflineActivationResponse(armored: text)
                Issue.record("\(field) = \(String(describing: value)) was accepted")
            } catch {
                #expect(error.description.contains(naming), "\(field): \(error.description)")
            }
        }
        let proof = try Self.payload(try OfflineDeactivationProof.sign(instanceId: "inst-1", issuedAt: 5, with: Self.deviceKey).armored)
        for (field, value, naming) in [("signature", "AAAA", "signature is not"), ("issued_at", -1, "issued_at"), ("instance_id", "", "instance_id")] as [(String, Any, String)] {
            var json = proof
            json[field] = value
            let text = ArmoredText.encode(try JSONSerialization.data(withJSONObject: json), label: OfflineDeactivationProof.label)
            #expect(throws: OfflineFileError.self, "\(naming)") { try OfflineDeactivationProof(armored: text) }
        }
    }

    /// Random damage to each kind of file: the parsers answer (accept or refuse), never trap or
    /// hang, and whatever they accept writes itself back to an equal value.
    @Test func mutatedFilesNeverTrapAndWhatIsAcceptedRoundTrips() throws {
        var fuzzer = Mutator(seed: Mutator.seed("offline files"))
        let request = Self.request().armored
        let response = try Self.response().armored
        let proof = try OfflineDeactivationProof.sign(instanceId: "inst-1", issuedAt: 5, with: Self.deviceKey).armored
        for _ in 0..<1_500 {
            if let parsed = try? OfflineActivationRequest(armored: fuzzer.mutate(text: request)) {
                #expect((try? OfflineActivationRequest(armored: parsed.armored)) == parsed, "seed \(fuzzer.seed)")
            }
            if let parsed = try? OfflineActivationResponse(armored: fuzzer.mutate(text: response)) {
                #expect((try? OfflineActivationResponse(armored: parsed.armored)) == parsed, "seed \(fuzzer.seed)")
            }
            if let parsed = try? OfflineDeactivationProof(armored: fuzzer.mutate(text: proof)) {
                #expect((try? OfflineDeactivationProof(armored: parsed.armored)) == parsed, "seed \(fuzzer.seed)")
            }
        }
    }
}
