/// Why a trust operation failed. Compare with the static members.
public struct TrustError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier.
    public let code: String
    public let message: String

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public static let malformedInvitation = TrustError("malformed_invitation", "This is not a Keylight trust invitation.")
    public static func wrongScheme(_ expected: String) -> TrustError {
        TrustError("wrong_scheme", "This invitation is for another app (expected \(expected)://trust/…).")
    }
    public static func unsupportedVersion(_ version: Int) -> TrustError {
        TrustError("unsupported_version", version < Invitation.currentVersion
            ? "This invitation uses an old format (version \(version)); make a new one."
            : "This invitation is from a newer version (\(version)); update this app.")
    }
    public static let expiredInvitation = TrustError("expired_invitation", "This invitation has expired; make a new one.")
    public static let unknownInvitation = TrustError("unknown_invitation", "This invitation was not made here, or was already used.")
    public static let wrongSecret = TrustError("wrong_secret", "The invitation's secret does not match.")
    public static let unknownDevice = TrustError("unknown_device", "That device is not trusted here (pair it first).")
    public static let badSignature = TrustError("bad_signature", "The other device's signature does not verify: not the device it claims to be.")
    public static let protocolError = TrustError("protocol_error", "The other device did not follow the trust protocol.")
    public static func refused(_ reason: String) -> TrustError { TrustError("refused", "The other device refused: \(reason)") }
    public static let storage = TrustError("storage", "The trust store cannot be read or written.")
}
