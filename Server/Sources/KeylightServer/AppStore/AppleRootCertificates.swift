import Foundation
import SwiftASN1
import X509

/// The roots App Store signed data must chain to.
struct AppleRootCertificates: Sendable {
    let roots: [Certificate]

    /// Apple Root CA - G3 (https://www.apple.com/certificateauthority/AppleRootCA-G3.cer), the root
    /// of the App Store's signing chain, valid to 2039. SHA-256 of this DER:
    /// 63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179 (checked by a test).
    static let appleRootCAG3DER = """
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u\
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS\
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49\
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517\
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA\
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM\
        6BgD56KyKA==
        """

    /// Only Apple Root CA - G3.
    static func apple() throws -> AppleRootCertificates {
        guard let der = Data(base64Encoded: appleRootCAG3DER) else { throw LoadError(description: "the built-in Apple root does not decode") }
        return AppleRootCertificates(roots: [try Certificate(derEncoded: Array(der))])
    }

    /// The roots in PEM files (`--appstore-root-cert`, repeatable), replacing Apple's: for tests and local tooling.
    static func load(pemFiles: [String]) throws -> AppleRootCertificates {
        var roots: [Certificate] = []
        for path in pemFiles {
            guard let data = FileManager.default.contents(atPath: path) else { throw LoadError(description: "\(path) cannot be read") }
            let certificates = (try? PEMDocument.parseMultiple(pemString: String(decoding: data, as: UTF8.self)).map { try Certificate(pemDocument: $0) }) ?? []
            guard !certificates.isEmpty else { throw LoadError(description: "\(path) holds no PEM certificate") }
            roots += certificates
        }
        guard !roots.isEmpty else { throw LoadError(description: "no App Store root certificate given") }
        return AppleRootCertificates(roots: roots)
    }

    struct LoadError: Error, CustomStringConvertible {
        let description: String
    }
}
