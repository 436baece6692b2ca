import Foundation
import HTTPTypes

extension HTTPField.Name {
    static let keylightSDKKey = Self("X-Keylight-SDK-Key")!
    static let keylightRequestId = Self("X-Keylight-Request-Id")!
    static let keylightNonce = Self("X-Keylight-Nonce")!
    static let keylightRequestTime = Self("X-Keylight-Request-Time")!
    static let keylightSignatureKid = Self("X-Keylight-Signature-Kid")!
    static let keylightSignature = Self("X-Keylight-Signature")!
    static let xForwardedFor = Self("X-Forwarded-For")!
    /// The device's lease, base64url of its JSON, on update requests (protocol 6.9).
    static let keylightLease = Self("X-Keylight-Lease")!
    static let xAccelRedirect = Self("X-Accel-Redirect")!
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or nil.
func bearerToken(_ header: String) -> String? {
    guard header.lowercased().hasPrefix("bearer ") else { return nil }
    return header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
}
