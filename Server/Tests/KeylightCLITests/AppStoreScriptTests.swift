import AsyncHTTPClient
import Foundation
import KeylightTestSupport
import Testing

/// App Store purchases as licenses, from outside: `Tests/AppStore/appstore_cases.py` builds a test
/// chain shaped like Apple's (marker extensions on the leaf and intermediate), signs transactions
/// and notifications with it, and records what Apple's own app-store-server-library
/// (`SignedDataVerifier`, given the same root) makes of each; `appstore_exchange.py` then holds a
/// `keylight serve --appstore-root-cert` to the same verdicts, and checks the exchange race, the
/// key's use in a direct build, renewals and the notifications.
@Suite(.timeLimit(.minutes(6))) struct AppStoreScriptTests {
    static func libraryInstalled() async -> Bool {
        (try? await ChildProcess.python("-c", ["import appstoreserverlibrary, cryptography"]))?.status == 0
    }

    @Test func theServerAndApplesLibraryAgreeOnEverySignedTransaction() async throws {
        guard await Self.libraryInstalled() else {
            try PrerequisiteGate.missing("Apple's app-store-server-library (pip install app-store-server-library==3.1.2)")
            return
        }
        let directory = try temporaryDirectory()
        let generated = try await ChildProcess.python(CLI.packageRoot.appendingPathComponent("Tests/AppStore/appstore_cases.py").path, [directory.appendingPathComponent("chain").path], mergeStandardError: false)
        try #require(generated.status == 0, "\(String(decoding: generated.stderr, as: UTF8.self))")
        let cases = directory.appendingPathComponent("cases.json")
        try generated.stdout.write(to: cases)
        let token = "appstore-script-token"
        let server = try await ServerProcess(
            database: directory.appendingPathComponent("appstore.sqlite").path,
            environment: ["KEYLIGHT_ADMIN_TOKEN": token],
            arguments: ["--appstore-root-cert", directory.appendingPathComponent("chain/root.pem").path, "--rate-limit-address", "0", "--rate-limit-license", "0"]
        )
        let run: (status: Int32, output: String)
        do {
            run = try await CLI.python("Tests/AppStore/appstore_exchange.py", environment: [
                "KEYLIGHT_URL": "http://127.0.0.1:\(server.port)", "KEYLIGHT_ADMIN_TOKEN": token, "CASES": cases.path,
            ], limit: .seconds(120))
        } catch {
            _ = await server.terminate()
            throw error
        }
        _ = await server.terminate()
        #expect(run.status == 0, "\(run.output)")
        for check in ["agree on all 9 signed transactions", "50 concurrent exchanges of one purchase mint one license", "REFUND revokes", "refuse the same ones", "REVOKE revokes its purchase's license", "keeps the key type's cap", "the answer names the key type",
                      "every App Store exchange and notification path holds"] {
            #expect(run.output.contains(check), "missing check \(check): \(run.output)")
        }
    }

    /// Without `--appstore-root-cert`, only Apple Root CA - G3 is trusted: the test chain is refused.
    @Test func byDefaultOnlyApplesRootIsTrusted() async throws {
        guard await Self.libraryInstalled() else {
            try PrerequisiteGate.missing("Apple's app-store-server-library (pip install app-store-server-library==3.1.2)")
            return
        }
        let directory = try temporaryDirectory()
        let generated = try await ChildProcess.python(CLI.packageRoot.appendingPathComponent("Tests/AppStore/appstore_cases.py").path, [directory.appendingPathComponent("chain").path], mergeStandardError: false)
        let data = try #require(try JSONSerialization.jsonObject(with: generated.stdout) as? [String: Any])
        let valid = try #require((data["cases"] as? [[String: Any]])?.first { $0["name"] as? String == "valid" }?["jws"] as? String)
        let server = try await ServerProcess(database: directory.appendingPathComponent("a.sqlite").path, environment: ["KEYLIGHT_ADMIN_TOKEN": "t"])
        let auth = [("Authorization", "Bearer t")]
        _ = try await server.request(.POST, "/admin/v1/tenants", headers: auth, json: #"{"id":"acme","name":"Acme"}"#, using: .shared)
        let product = try await server.request(.POST, "/admin/v1/tenants/acme/products", headers: auth, json: #"{"id":"app","name":"App","key_prefix":"ACME"}"#, using: .shared)
        let sdkKey = try #require(product.body["sdk_key"] as? String)
        _ = try await server.request(.PATCH, "/admin/v1/tenants/acme/products/app", headers: auth, json: #"{"appstore_bundle_id":"com.acme.app"}"#, using: .shared)
        let answer = try await server.request(.POST, "/acme/app/appstore/activate", headers: [("X-Keylight-SDK-Key", sdkKey)],
                                              json: #"{"signed_transaction":"\#(valid)","instance_name":"Mac"}"#, using: .shared)
        _ = await server.terminate()
        #expect(answer.status == 422 && answer.body["code"] as? String == "APPSTORE_CHAIN_UNTRUSTED", "\(answer)")
    }
}
