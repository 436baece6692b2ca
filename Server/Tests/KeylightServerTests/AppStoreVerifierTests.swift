import Crypto
import Foundation
import KeylightCore
@testable import KeylightServer
import Testing

/// The built-in root and what the verifier refuses before any certificate is trusted.
@Suite struct AppStoreVerifierTests {
    @Test func theBuiltInRootIsApplesRootCAG3() throws {
        let der = try #require(Data(base64Encoded: AppleRootCertificates.appleRootCAG3DER))
        // Apple's published SHA-256 fingerprint of AppleRootCA-G3.cer.
        #expect(Hex.encode(SHA256.hash(data: der)) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        let roots = try AppleRootCertificates.apple()
        #expect(roots.roots.count == 1 && roots.roots[0].subject.description.contains("Apple Root CA - G3"))
    }

    @Test func malformedSignedDataIsRefusedByName() async throws {
        let verifier = AppStoreSignedData(roots: try AppleRootCertificates.apple())
        func code(_ jws: String) async -> String? {
            do {
                _ = try await verifier.verify(jws)
                return nil
            } catch {
                return error.code
            }
        }
        func part(_ json: String) -> String { Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
        #expect(await code("not a jws") == "APPSTORE_SIGNATURE_INVALID")
        #expect(await code("a.b") == "APPSTORE_SIGNATURE_INVALID")
        #expect(await code(part(#"{"alg":"none"}"#) + "." + part(#"{"signedDate":1}"#) + ".") == "APPSTORE_SIGNATURE_INVALID")
        #expect(await code(part(#"{"alg":"HS256","x5c":[]}"#) + "." + part(#"{"signedDate":1}"#) + ".AAAA") == "APPSTORE_SIGNATURE_INVALID")
        #expect(await code(part(#"{"alg":"ES256","x5c":["AAAA","AAAA"]}"#) + "." + part(#"{"signedDate":1}"#) + ".AAAA") == "APPSTORE_CHAIN_UNTRUSTED")
        #expect(await code(part(#"{"alg":"ES256","x5c":["AAAA","AAAA","AAAA"]}"#) + "." + part(#"{"signedDate":1}"#) + ".AAAA") == "APPSTORE_CHAIN_UNTRUSTED")
        #expect(await code(part(#"{"alg":"ES256","x5c":[]}"#) + "." + part("[1]") + ".AAAA") == "APPSTORE_SIGNATURE_INVALID")
        #expect(await code(String(repeating: "A", count: AppStoreSignedData.maxBytes + 1)) == "APPSTORE_SIGNATURE_INVALID")
    }
}

extension AppStoreVerifierTests {
    /// signedDate is read before anything is verified: one no certificate time can hold (past
    /// the year 9999) must be a refusal, not a trap in the X.509 library.
    @Test func anImpossibleSignedDateIsRefusedNotATrap() async throws {
        let verifier = AppStoreSignedData(roots: try AppleRootCertificates.apple())
        let root = AppleRootCertificates.appleRootCAG3DER.replacingOccurrences(of: "\n", with: "").replacingOccurrences(of: " ", with: "")
        func part(_ json: String) -> String { Data(json.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
        for date in ["300000000000000", "-5", "0", "1e300"] {
            let jws = part(#"{"alg":"ES256","x5c":["\#(root)","\#(root)","\#(root)"]}"#) + "." + part(#"{"signedDate":\#(date)}"#) + ".AAAA"
            do {
                _ = try await verifier.verify(jws)
                Issue.record("signedDate \(date) was accepted")
            } catch {
                #expect(error.code == "APPSTORE_SIGNATURE_INVALID", "signedDate \(date): \(error)")
            }
        }
    }
}
