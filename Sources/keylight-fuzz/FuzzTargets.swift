import Crypto
import Foundation
import KeylightCore
import KeylightSigning

/// The parsers of untrusted bytes worth a coverage-guided fuzzer, by name. Each must return
/// normally for every input: a trap or a hang is the finding.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        // A license key is the first thing every SDK request carries.
        "license-key": { bytes in
            guard let key = try? LicenseKey(String(decoding: bytes, as: UTF8.self)) else { return }
            precondition((try? LicenseKey(key.text))?.text == key.text, "normal form is not stable")
        },
        // Unauthenticated: read before any signature is known to be right.
        "stripe-signature": { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            for now in [Int64.min, 0, 1_700_000_000, Int64.max] {
                _ = WebhookSignature.isValid(header: text, body: bytes, secret: "whsec_fuzz", now: now)
            }
        },
        // What a man in the middle on the user's own device controls.
        "response-signature": { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? ResponseSignature(header: text)
            _ = ResponseNonce(header: text)
            let verifier = ResponseSignatureVerifier(keyset: keyset)
            _ = try? verifier.verify(signature: text, kid: "k1", requestTime: text, nonce: bytes, path: "/a/b/validate", body: bytes, now: Int64(bytes.count) - 1_000)
        },
        // Leases arrive from the server and from disk.
        "lease": { bytes in
            guard let lease = try? Lease(json: Data(bytes)) else { return }
            for now in [Int64.min, 0, Int64.max] { _ = lease.verify(with: keyset, now: now) }
        },
    ]

    /// A fixed key: the fuzzer must be deterministic for a given input.
    static let keyset: Keyset = {
        let key = try! Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 7, count: 32))
        return Keyset(["k1": key.publicKey])
    }()

    /// `KEYLIGHT_FUZZ_TARGET`, or the first argument's folder name.
    static func selected(arguments: [String]) -> (String, @Sendable ([UInt8]) -> Void)? {
        let name = ProcessInfo.processInfo.environment["KEYLIGHT_FUZZ_TARGET"]
            ?? arguments.dropFirst().first.map { URL(fileURLWithPath: $0).lastPathComponent }
        guard let name, let target = all[name] else { return nil }
        return (name, target)
    }
}
