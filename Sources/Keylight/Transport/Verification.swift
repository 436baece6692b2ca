import Foundation
import KeylightCore

/// How the SDK treats signed responses (protocol section 3), which protect it from a
/// man-in-the-middle on the user's own device (a proxy with a user-installed certificate).
public enum VerificationMode: String, Sendable, Hashable, CaseIterable {
    /// No nonce is sent; responses are taken as they come.
    case disabled
    /// Every response is verified and the result reported; behaviour does not change.
    case informational
    /// A response that fails verification is treated as a transport failure: it never changes
    /// the license state, and `signatureVerificationFailed` is reported.
    case enforced
}

/// The outcome of verifying one response.
public enum SignatureCheck: Hashable, Sendable, CustomStringConvertible {
    /// Verification is disabled, or no response has been checked yet.
    case notRequested
    case verified
    /// The response failed: `reason` is the failed check (`bad_message_signature`, `missing_signature`, …).
    case failed(reason: String)

    public var description: String {
        switch self {
        case .notRequested: "notRequested"
        case .verified: "verified"
        case .failed(let reason): "failed(\(reason))"
        }
    }
}

extension KeylightError {
    /// In enforced mode, a response whose signature did not verify.
    public static func signatureVerificationFailed(_ reason: String) -> KeylightError {
        KeylightError(code: "SIGNATURE_VERIFICATION_FAILED", message: "The server's response could not be verified (\(reason)).")
    }
}

/// Verifies one response against the nonce sent with its request.
struct ResponseVerification: Sendable {
    let verifier: ResponseSignatureVerifier

    func check(_ response: TransportResponse, nonce: ResponseNonce, path: String, now: Int64) -> SignatureCheck {
        guard let signature = response.headers["x-keylight-signature"], let kid = response.headers["x-keylight-signature-kid"],
              let requestTime = response.headers["x-keylight-request-time"] else {
            return .failed(reason: ResponseSignatureError.missingSignature.code)
        }
        do {
            try verifier.verify(signature: signature, kid: kid, requestTime: requestTime, nonce: nonce.bytes, path: path, body: Array(response.body), now: now)
            return .verified
        } catch {
            return .failed(reason: error.code)
        }
    }
}

extension SignatureCheck {
    /// How cached data records the verification of the response that brought it.
    var storedName: String {
        switch self {
        case .notRequested: "notRequested"
        case .verified: "verified"
        case .failed: "failed"
        }
    }
}
