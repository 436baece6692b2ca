import Crypto
import Foundation
import KeylightCore
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies App Store signed data (a StoreKit 2 transaction's `jwsRepresentation`, a server
/// notification's `signedPayload`) as Apple's own app-store-server-library does with online
/// checks off: a compact JWS, `alg` ES256, three certificates in `x5c` (leaf, intermediate, root),
/// the chain built by swift-certificates to one of the trusted roots under RFC 5280 with every
/// certificate valid at the data's `signedDate`, Apple's marker extensions on the leaf
/// (1.2.840.113635.100.6.11.1) and the intermediate (1.2.840.113635.100.6.2.1), then the
/// signature checked with the leaf's P-256 key.
struct AppStoreSignedData: Sendable {
    let roots: AppleRootCertificates

    /// Signed data larger than this is not App Store data (a transaction is about 3-4 KiB).
    static let maxBytes = 64 * 1024

    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    /// The verified payload as JSON.
    func verify(_ jws: String) async throws(APIError) -> EventJSON {
        guard jws.utf8.count <= Self.maxBytes else { throw .appStoreSignatureInvalid("over 64 KiB") }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
              let signatureBytes = Base64URL.decode(parts[2]) else {
            throw .appStoreSignatureInvalid("not a compact JWS")
        }
        guard let header = EventJSON.parse(headerBytes), header["alg"].string == "ES256" else {
            throw .appStoreSignatureInvalid("the header does not name ES256")
        }
        guard let payload = EventJSON.parse(payloadBytes) else { throw .appStoreSignatureInvalid("the payload is not a JSON object") }
        let x5c = header["x5c"].array.compactMap(\.string)
        guard x5c.count == 3, header["x5c"].array.count == 3 else { throw .appStoreChainUntrusted("x5c must hold three certificates") }
        var certificates: [Certificate] = []
        for encoded in x5c {
            guard encoded.utf8.count <= 16 * 1024, let der = Data(base64Encoded: encoded), let certificate = try? Certificate(derEncoded: Array(der)) else {
                throw .appStoreChainUntrusted("a certificate in x5c does not parse")
            }
            certificates.append(certificate)
        }
        // Judged at signedDate (receiptCreationDate for app transactions), as Apple's library judges
        // it offline: data signed while a certificate was valid stays valid after it expires.
        // Bounded before it becomes a certificate time: an unverified payload chooses it.
        guard let signedSeconds = AppStoreTransaction.seconds(payload["signedDate"].value == nil ? payload["receiptCreationDate"] : payload["signedDate"]) else {
            throw .appStoreSignatureInvalid("the payload has no signedDate in 1970-2200")
        }
        let signedDate = Date(timeIntervalSince1970: TimeInterval(signedSeconds))
        var verifier = Verifier(rootCertificates: CertificateStore(roots.roots)) {
            RFC5280Policy(fixedExpiryValidationTime: signedDate)
            AppleMarkerPolicy()
        }
        let result = await verifier.validate(leaf: certificates[0], intermediates: CertificateStore([certificates[1]]))
        guard case .validCertificate = result else {
            throw .appStoreChainUntrusted("it does not lead to a trusted root with Apple's marker extensions, valid at signedDate")
        }
        guard let key = P256.Signing.PublicKey(certificates[0].publicKey), signatureBytes.count == 64,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
              key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)) else {
            throw .appStoreSignatureInvalid("the signature does not verify with the leaf certificate")
        }
        return payload
    }
}

/// Apple's marker extensions: 1.2.840.113635.100.6.11.1 on the leaf (App Store receipt signing)
/// and 1.2.840.113635.100.6.2.1 on the intermediate (Apple Worldwide Developer Relations). Without
/// them any certificate Apple's root vouches for could sign purchases.
struct AppleMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [AppStoreSignedData.leafMarker, AppStoreSignedData.intermediateMarker]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else { return .failsToMeetPolicy(reason: "the chain is not leaf, intermediate, root") }
        guard chain[0].extensions[oid: AppStoreSignedData.leafMarker] != nil else { return .failsToMeetPolicy(reason: "the leaf lacks Apple's marker") }
        guard chain[1].extensions[oid: AppStoreSignedData.intermediateMarker] != nil else { return .failsToMeetPolicy(reason: "the intermediate lacks Apple's marker") }
        return .meetsPolicy
    }
}

/// RFC 4648 §5 base64url without padding, as JWS writes it.
enum Base64URL {
    static func decode(_ text: Substring) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "/") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
