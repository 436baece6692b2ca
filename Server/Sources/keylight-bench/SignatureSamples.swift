import AsyncHTTPClient
import Foundation
import KeylightCore
import NIOCore

/// Signed responses that wrk's `checkedValidate` script wrote to files during a run, verified
/// here with the SDK's own verifier: counting signature headers shows every response had one,
/// these show the ones under load were real signatures over the bodies that came back.
struct SignatureSamples {
    struct Sample {
        var status: Int
        var signature: String
        var kid: String
        var requestTime: String
        var body: [UInt8]
    }

    let prefix: URL

    /// Every sample file's entries (`status signature kid time length`, newline, body, newline).
    func read() throws -> [Sample] {
        let directory = prefix.deletingLastPathComponent()
        let stem = prefix.lastPathComponent + "-"
        var samples: [Sample] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasPrefix(stem) {
            var bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))[...]
            while let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                let fields = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ").map(String.init)
                guard fields.count == 5, let status = Int(fields[0]), let length = Int(fields[4]),
                      length >= 0, bytes.distance(from: newline, to: bytes.endIndex) > length else {
                    throw BenchError("malformed signature sample in \(name)")
                }
                let body = bytes.index(after: newline)
                samples.append(Sample(status: status, signature: fields[1], kid: fields[2], requestTime: fields[3], body: Array(bytes[body..<(body + length)])))
                bytes = bytes[(body + length)...].dropFirst()
            }
        }
        return samples
    }

    /// Verifies every sample against the tenant's published keyset; returns how many passed
    /// and a description of each that did not.
    func verify(base: String, tenant: String, path: String, nonce: String) async throws -> (verified: Int, failures: [String]) {
        var request = HTTPClientRequest(url: base + "/\(tenant)/.well-known/keylight-keys")
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        let verifier = ResponseSignatureVerifier(keyset: try Keyset(json: Data(body.readableBytesView)))
        guard let nonceBytes = Base64.decode(nonce) else { throw BenchError("bad nonce") }
        let now = SystemWallClock().unixSeconds
        var verified = 0
        var failures: [String] = []
        for sample in try read() {
            do {
                try verifier.verify(
                    signature: sample.signature, kid: sample.kid, requestTime: sample.requestTime,
                    nonce: nonceBytes, path: path, body: sample.body, now: now
                )
                verified += 1
            } catch {
                failures.append("status \(sample.status): \(error)")
            }
        }
        return (verified, failures)
    }
}
