import ArgumentParser
import Crypto
import Foundation
import KeylightCore
import KeylightSigning

/// Lease, response-signature and raw Ed25519 rates on this machine, with each verify's ratio to
/// a raw Ed25519 verify of the same payload (the cost floor no implementation can beat).
struct CoreBenchmarks: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "core", abstract: "Formats and crypto (KeylightCore).")

    @Option(help: "Seconds per measured round (5 rounds each, median reported).")
    var seconds: Double = 1.0

    func run() throws {
        let measure = Measurement(secondsPerRound: seconds)
        let key = try SigningKey.generate(kid: "k1")
        let keyset = Keyset(["k1": key.publicKey])
        let now: Int64 = 1_781_076_256
        let lease = try Lease.sign(
            licenseKeyHash: try LicenseKey.generate(prefix: "ACME").keyHash,
            instanceId: UUID().uuidString.lowercased(),
            issuedAt: now - 10,
            expiresAt: now + 7 * 86_400,
            status: .active,
            entitlements: ["pro", "export", "sync"],
            with: key
        )
        let leaseJSON = lease.json()
        let payload = lease.signedPayload
        let signature = Base64.decode(lease.signature)!

        // The floor: one Ed25519 verify of the same bytes, everything else done in advance.
        let raw = measure.opsPerSecond { blackHole(key.publicKey.isValidSignature(signature, for: payload)) }
        report("ed25519.verify.raw", opsPerSecond: raw)

        let verify = measure.opsPerSecond { blackHole(lease.verify(with: keyset, now: now)) }
        report("lease.verify", opsPerSecond: verify, extra: ratio(verify, raw, target: 0.9))

        let verifyJSON = measure.opsPerSecond { blackHole((try? Lease(json: leaseJSON))?.verify(with: keyset, now: now)) }
        report("lease.decode_json_and_verify", opsPerSecond: verifyJSON, extra: ratio(verifyJSON, raw, target: nil))

        let sign = measure.opsPerSecond {
            blackHole(try? Lease.sign(
                licenseKeyHash: lease.licenseKeyHash, instanceId: lease.instanceId, issuedAt: lease.issuedAt,
                expiresAt: lease.expiresAt, status: .active, entitlements: lease.entitlements, with: key
            ))
        }
        report("lease.sign", opsPerSecond: sign)

        // A response signature costs two verifies (root over the intermediate, intermediate over
        // the message), so its natural ratio to one raw verify is about 0.5.
        let intermediate = IntermediateSigningKey.create(root: key, now: now, validForDays: 3)
        let nonce = ResponseNonce()
        let body = Array(#"{"valid":true,"license_expires_at":null,"lease":\#(String(decoding: leaseJSON, as: UTF8.self))}"#.utf8)
        var generator = SystemRandomNumberGenerator()
        let header = intermediate.sign(nonce: nonce.bytes, path: "/t1/p1/validate", requestTime: "1781076256000", body: body, using: &generator).header
        let verifier = ResponseSignatureVerifier(keyset: keyset)
        let responseVerify = measure.opsPerSecond {
            blackHole(try? verifier.verify(
                signature: header, kid: "k1", requestTime: "1781076256000", nonce: nonce.bytes,
                path: "/t1/p1/validate", body: body, now: now
            ))
        }
        report("response_signature.verify", opsPerSecond: responseVerify, extra: ratio(responseVerify, raw, target: nil))

        let responseSign = measure.opsPerSecond {
            blackHole(intermediate.sign(nonce: nonce.bytes, path: "/t1/p1/validate", requestTime: "1781076256000", body: body, using: &generator))
        }
        report("response_signature.sign", opsPerSecond: responseSign)
    }

    private func ratio(_ value: Double, _ raw: Double, target: Double?) -> [(String, String)] {
        var fields = [("ratio_to_raw_ed25519_verify", String(format: "%.3f", value / raw))]
        if let target {
            fields.append(("target", String(format: "%.2f", target)))
            fields.append(("meets_target", "\(value / raw >= target)"))
        }
        return fields
    }
}
