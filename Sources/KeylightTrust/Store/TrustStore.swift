import Crypto
import Foundation
import Keylight
import KeylightCore

/// A device this one trusts: paired once, authenticated by its identity key ever after.
public struct TrustedDevice: Sendable, Hashable, Codable {
    public let deviceId: String
    public var name: String
    /// Raw Ed25519 public key, base64.
    public let publicKey: String
    public let trustedAt: Int64
    public var lastConnectedAt: Int64?

    var key: Curve25519.Signing.PublicKey? {
        Base64.decode(publicKey).flatMap { try? Curve25519.Signing.PublicKey(rawRepresentation: $0) }
    }

    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id", name, publicKey = "public_key", trustedAt = "trusted_at", lastConnectedAt = "last_connected_at"
    }
}

/// Trusted devices, the invitations this device has issued (secret hashes only) and the ones it
/// has accepted but not yet used, kept in a ``SecureStore`` so they survive restarts.
public final class TrustStore: Sendable {
    private let store: any SecureStore
    private let lock = NSLock()
    static let storeKey = "keylight.trust.store"

    struct Issued: Codable {
        var id: String
        /// SHA-256 of the secret: the secret itself is only in the invitation.
        var secret_sha256: String
        var exp: Int64
    }

    private struct Contents: Codable {
        var devices: [TrustedDevice] = []
        var issued: [Issued] = []
        /// Accepted invitation links, newest last.
        var accepted: [String] = []
    }

    public init(store: any SecureStore) {
        self.store = store
    }

    private func read() throws(TrustError) -> Contents {
        do {
            guard let data = try store.data(for: Self.storeKey) else { return Contents() }
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw .storage
        }
    }

    private func write(_ contents: Contents) throws(TrustError) {
        do {
            try store.set(try JSONEncoder().encode(contents), for: Self.storeKey)
        } catch {
            throw .storage
        }
    }

    /// Reads, changes and writes the contents under the lock (one process at a time per store).
    private func update<T>(_ body: (inout Contents) throws(TrustError) -> T) throws(TrustError) -> T {
        lock.lock()
        defer { lock.unlock() }
        var contents = try read()
        let result = try body(&contents)
        try write(contents)
        return result
    }

    // MARK: Devices

    public func devices() throws(TrustError) -> [TrustedDevice] {
        lock.lock()
        defer { lock.unlock() }
        return try read().devices
    }

    public func device(id: String) throws(TrustError) -> TrustedDevice? {
        try devices().first { $0.deviceId == id }
    }

    /// Trusts a device (replacing an earlier entry with the same id).
    func trust(_ device: TrustedDevice) throws(TrustError) {
        try update { (contents: inout Contents) throws(TrustError) in
            contents.devices.removeAll { $0.deviceId == device.deviceId }
            contents.devices.append(device)
        }
    }

    /// Stops trusting a device; false when it was not trusted.
    @discardableResult
    public func revoke(deviceId: String) throws(TrustError) -> Bool {
        try update { (contents: inout Contents) throws(TrustError) in
            let before = contents.devices.count
            contents.devices.removeAll { $0.deviceId == deviceId }
            return contents.devices.count != before
        }
    }

    func touch(deviceId: String, at now: Int64) throws(TrustError) {
        try update { (contents: inout Contents) throws(TrustError) in
            if let index = contents.devices.firstIndex(where: { $0.deviceId == deviceId }) { contents.devices[index].lastConnectedAt = now }
        }
    }

    // MARK: Invitations this device issued

    /// Remembers an invitation this device showed, until it is used or expires.
    public func remember(issued invitation: Invitation, now: Int64) throws(TrustError) {
        try update { (contents: inout Contents) throws(TrustError) in
            contents.issued.removeAll { $0.exp <= now }
            contents.issued.append(Issued(id: invitation.id, secret_sha256: Hex.encode(SHA256.hash(data: invitation.secret)), exp: invitation.expiresAt))
        }
    }

    /// Checks a presented secret against an issued invitation, in constant time, and uses the
    /// invitation up: a secret works once, whether or not the pairing then completes.
    func consume(invitationId: String, secret: [UInt8], now: Int64) throws(TrustError) {
        try update { (contents: inout Contents) throws(TrustError) in
            contents.issued.removeAll { $0.exp <= now }
            guard let index = contents.issued.firstIndex(where: { $0.id == invitationId }) else { throw .unknownInvitation }
            let issued = contents.issued.remove(at: index)
            let presented = Array(SHA256.hash(data: secret))
            guard let expected = Hex.decode(issued.secret_sha256), ConstantTime.equals(presented, expected) else {
                // Used up even so: a guesser gets one try per invitation.
                try write(contents)
                throw .wrongSecret
            }
        }
    }

    // MARK: Invitations this device accepted

    public func remember(accepted invitation: Invitation, scheme: String) throws(TrustError) {
        try update { (contents: inout Contents) throws(TrustError) in contents.accepted.append(invitation.url(scheme: scheme)) }
    }

    /// The newest accepted invitation still valid, removed from the store.
    public func takeAccepted(scheme: String, now: Int64) throws(TrustError) -> Invitation? {
        try update { (contents: inout Contents) throws(TrustError) in
            let valid = contents.accepted.compactMap { try? Invitation.parse($0, scheme: scheme, now: now) }
            contents.accepted = []
            return valid.last
        }
    }
}
