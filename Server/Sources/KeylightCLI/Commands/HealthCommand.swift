import ArgumentParser
import Foundation
import Keylight
import KeylightHTTPTransport

/// `keylight health`: asks a running server whether it is ready, for container health checks
/// (slim images have no curl) and scripts. Exit status 0 when it answers 200, else 1.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check that a running server is ready (exit 0) or not (exit 1).",
        discussion: "Asks /readyz by default: 200 while the database answers and the signing keys are loaded, 503 once a shutdown has begun. Ask /healthz for liveness alone."
    )

    @Option(help: "The URL to ask.")
    var url = "http://127.0.0.1:8080/readyz"

    @Option(help: "Seconds to wait for the answer.")
    var timeout = 5

    func run() async throws {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", target.host != nil else {
            throw ValidationError("--url must be an http(s) URL")
        }
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be 1-300 seconds") }
        do {
            let response = try await HTTPClientTransport(baseURL: target, timeout: .seconds(Int64(timeout))).send(TransportRequest(method: "GET", path: ""))
            let body = String(decoding: response.body.prefix(512), as: UTF8.self)
            guard response.status == 200 else {
                Standard.error("keylight: \(url) answered \(response.status): \(body)")
                throw ExitCode(1)
            }
            Standard.line(body)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Standard.error("keylight: \(url) did not answer: \(error)")
            throw ExitCode(1)
        }
    }
}
