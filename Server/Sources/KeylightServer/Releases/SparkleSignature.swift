import Crypto
import Foundation
import KeylightCore
import NIOPosix

/// EdDSA signatures of release files as Sparkle checks them (`sparkle:edSignature`): Ed25519 over
/// the whole file, base64. The file is mapped, not read into memory, and the work runs on NIO's
/// blocking thread pool so an event loop never waits on a 2 GiB signature.
enum SparkleSignature {
    /// Signs the file at `path`; answers standard base64 of the 64-byte signature.
    static func sign(fileAt path: String, with key: Curve25519.Signing.PrivateKey) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
            return try key.signature(for: bytes).base64EncodedString()
        }
    }

    /// Whether `signature` (64 bytes) is the key's signature of the file at `path`.
    static func isValid(_ signature: Data, fileAt path: String, publicKey: Curve25519.Signing.PublicKey) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
            return publicKey.isValidSignature(signature, for: bytes)
        }
    }

    /// Decodes a signature (64 bytes) or key (32) given as URL-safe or standard base64, padded
    /// or not; nil unless it has that length.
    static func decode(_ text: String, length: Int = 64) -> Data? {
        guard text.utf8.count <= 128, let data = Base64.decode(text), data.count == length else { return nil }
        return data
    }
}
