import Foundation

/// One message of the trust protocol: a JSON object with a `type`. Unknown fields are ignored;
/// sizes are bounded by the channel.
public struct TrustMessage: Codable, Sendable, Equatable {
    public var type: String
    public var invitation_id: String?
    /// base64url.
    public var secret: String?
    public var device_id: String?
    public var name: String?
    /// Raw Ed25519 public key, base64.
    public var key: String?
    /// 32 random bytes, base64url.
    public var nonce: String?
    /// Ed25519 signature over the session transcript, base64.
    public var signature: String?
    public var reason: String?

    public init(type: String) { self.type = type }

    static let pair = "pair"
    static let hello = "hello"
    static let challenge = "challenge"
    static let proof = "proof"
    static let welcome = "welcome"
    static let refused = "refused"
}

/// A two-way message stream between two devices (TCP, Bluetooth, a test pipe…).
public protocol TrustChannel: Sendable {
    func send(_ message: TrustMessage) async throws
    func receive() async throws -> TrustMessage
}

/// Newline-delimited JSON, the encoding the CLI's TCP channel uses.
public enum TrustFraming {
    public static let maxLineBytes = 16 * 1024

    public static func encode(_ message: TrustMessage) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(message) + Data([0x0A])
    }

    public static func decode(_ line: Data) throws(TrustError) -> TrustMessage {
        guard line.count <= maxLineBytes, let message = try? JSONDecoder().decode(TrustMessage.self, from: line) else { throw .protocolError }
        return message
    }
}
