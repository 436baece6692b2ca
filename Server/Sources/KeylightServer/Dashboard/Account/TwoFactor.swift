import Crypto
import Foundation
import HummingbirdOTP
import KeylightCore

/// TOTP (RFC 6238: SHA-1, six digits, 30-second steps, what every authenticator app reads) and
/// recovery codes.
struct TwoFactor: Sendable {
    let clock: any WallClock
    /// Steps either side of now that are accepted, for a phone's clock that is a little off.
    var skew: Int64 = 1
    static let stepSeconds: Int64 = 30
    static let recoveryCodeCount = 10
    private static let base32 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    /// A new secret: 32 base-32 characters, whose ASCII bytes are the HMAC key (160 bits of randomness).
    static func newSecret(using random: inout some RandomNumberGenerator) -> String {
        String((0..<32).map { _ in base32[Int.random(in: 0..<32, using: &random)] })
    }

    /// The `otpauth://` URL an authenticator app scans.
    static func authenticatorURL(secret: String, email: String, issuer: String) -> String {
        TOTP(secret: secret).createAuthenticatorURL(label: "\(issuer):\(email)", issuer: issuer)
    }

    /// The secret as an authenticator app takes it typed in (base 32 of its bytes, in groups of four).
    static func typedSecret(_ secret: String) -> String {
        let encoded = Base32.encode(Array(secret.utf8))
        return stride(from: 0, to: encoded.count, by: 4).map { start in
            let from = encoded.index(encoded.startIndex, offsetBy: start)
            return String(encoded[from..<(encoded.index(from, offsetBy: 4, limitedBy: encoded.endIndex) ?? encoded.endIndex)])
        }.joined(separator: " ")
    }

    /// The time step a code matches (now, or one step either side), or nil. The caller records
    /// the step so that the code does not work twice.
    func matchingStep(_ code: String, secret: String) -> Int64? {
        let digits = code.filter { !$0.isWhitespace }
        guard digits.count == 6, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let value = Int(digits) else { return nil }
        let now = clock.unixSeconds / Self.stepSeconds
        let totp = TOTP(secret: secret)
        var found: Int64?
        // Every candidate is computed and compared, so the time taken does not tell which matched.
        for step in (now - skew)...(now + skew) {
            let expected = totp.compute(date: Date(timeIntervalSince1970: TimeInterval(step * Self.stepSeconds)))
            if ConstantTime.equals(Array(String(format: "%06d", expected).utf8), Array(String(format: "%06d", value).utf8)) { found = step }
        }
        return found
    }

    /// Ten recovery codes as shown once (`xxxxx-xxxxx`, lower-case base 32).
    static func newRecoveryCodes(using random: inout some RandomNumberGenerator) -> [String] {
        (0..<recoveryCodeCount).map { _ in
            let chars = (0..<10).map { _ in Character(base32[Int.random(in: 0..<32, using: &random)].lowercased()) }
            return String(chars[0..<5]) + "-" + String(chars[5..<10])
        }
    }

    /// A recovery code's stored form; spaces, dashes and case do not matter when it is typed.
    static func recoveryCodeHash(_ code: String) -> String {
        let normalized = code.lowercased().filter { $0 != "-" && !$0.isWhitespace }
        return Hex.encode(SHA256.hash(data: Data(("keylight-recovery:" + normalized).utf8)))
    }

    /// Whether what was typed looks like a recovery code rather than a TOTP code.
    static func isRecoveryCode(_ code: String) -> Bool {
        code.filter { $0 != "-" && !$0.isWhitespace }.count == 10
    }

    static func sealContext(userId: String) -> String { "dashboard-totp|\(userId)" }
}

/// RFC 4648 base 32, without padding.
enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    static func encode(_ bytes: [UInt8]) -> String {
        var output = ""
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return output
    }
}
