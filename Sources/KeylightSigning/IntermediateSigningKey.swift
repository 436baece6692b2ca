import Crypto
import Foundation
import KeylightCore

/// A short-lived Ed25519 key that signs responses, certified by a root (keyset) key so the root
/// private key signs once a day rather than once per response.
public struct IntermediateSigningKey: Sendable, CustomStringConvertible {
    /// Kid of the root key that certified this key.
    public let rootKid: String
    public let privateKey: Curve25519.Signing.PrivateKey
    public let certificate: IntermediateKeyCertificate

    /// A new intermediate key valid through `expiryDay`, certified by `root`.
    public static func create(root: SigningKey, expiryDay: UInt32) -> IntermediateSigningKey {
        let privateKey = Curve25519.Signing.PrivateKey()
        let publicKey = Array(privateKey.publicKey.rawRepresentation)
        let rootSignature = root.signature(
            for: IntermediateKeyCertificate.signedBytes(publicKey: publicKey, expiryDay: expiryDay)
        )
        return IntermediateSigningKey(
            rootKid: root.kid,
            privateKey: privateKey,
            certificate: IntermediateKeyCertificate(publicKey: publicKey, expiryDay: expiryDay, rootSignature: Array(rootSignature))
        )
    }

    /// A new intermediate key valid for `days` days from `now` (Unix seconds), certified by `root`.
    public static func create(root: SigningKey, now: Int64, validForDays days: Int) -> IntermediateSigningKey {
        create(root: root, expiryDay: UInt32(clamping: keylightDay(now) + Int64(days)))
    }

    /// Restores a stored key (raw 32-byte private key and the 100-byte certificate).
    public init(rootKid: String, privateKeyRaw: some ContiguousBytes, certificateBytes: [UInt8]) throws(ResponseSignatureError) {
        guard certificateBytes.count == ResponseSignatureLayout.certificateRange.count,
              let privateKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: privateKeyRaw) else {
            throw .wrongLength
        }
        let certificate = IntermediateKeyCertificate(bytes: certificateBytes)
        guard certificate.publicKey == Array(privateKey.publicKey.rawRepresentation) else { throw .badRootSignature }
        self.init(rootKid: rootKid, privateKey: privateKey, certificate: certificate)
    }

    init(rootKid: String, privateKey: Curve25519.Signing.PrivateKey, certificate: IntermediateKeyCertificate) {
        self.rootKid = rootKid
        self.privateKey = privateKey
        self.certificate = certificate
    }

    /// Signs one response: one Ed25519 signature over the message, plus the stored certificate.
    public func sign(
        nonce: some Collection<UInt8>,
        path: String,
        requestTime: String,
        body: some Collection<UInt8>,
        salt: [UInt8]
    ) -> ResponseSignature {
        precondition(salt.count == ResponseSignatureLayout.Component.salt.size, "salt is 16 bytes")
        let message = ResponseSignature.message(salt: salt, nonce: nonce, path: path, requestTime: requestTime, body: body)
        let signature: Data
        do { signature = try privateKey.signature(for: message) } catch { fatalError("Ed25519 signing failed: \(error)") }
        return ResponseSignature(certificate: certificate, salt: salt, messageSignature: Array(signature))
    }

    /// Signs one response with a salt from `generator` (the system CSPRNG by default).
    public func sign(
        nonce: some Collection<UInt8>,
        path: String,
        requestTime: String,
        body: some Collection<UInt8>,
        using generator: inout some RandomNumberGenerator
    ) -> ResponseSignature {
        let salt = generator.bytes(ResponseSignatureLayout.Component.salt.size)
        return sign(nonce: nonce, path: path, requestTime: requestTime, body: body, salt: salt)
    }

    public var description: String { "IntermediateSigningKey(root: \(rootKid), expiryDay: \(certificate.expiryDay))" }
}
