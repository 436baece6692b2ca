import Crypto
import Foundation
import KeylightCore
import SQLKit

/// The server's bootstrap owner token (protocol 6.9): `klt_`, 40 random base62 characters and a
/// 6-character checksum (CRC-32 of the rest, base62), so a secret scanner can tell a real token
/// from a look-alike without asking the server. Stored as its SHA-256 only, in the `settings` row
/// `admin_token_sha256`, which every request reads, so a rotation holds at once on every process
/// and a token once replaced never works again.
public enum AdminToken {
    static let prefix = "klt_"
    static let bodyLength = 40
    static let checksumLength = 6
    static let setting = "admin_token_sha256"
    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    /// A new token.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let body = String(decoding: (0..<bodyLength).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }, as: UTF8.self)
        return prefix + body + checksum(of: body)
    }

    /// Whether `token` is one of this format with a checksum that holds.
    public static func isWellFormed(_ token: String) -> Bool {
        guard token.hasPrefix(prefix), token.utf8.count == prefix.utf8.count + bodyLength + checksumLength else { return false }
        let rest = token.dropFirst(prefix.count)
        let body = String(rest.prefix(bodyLength))
        guard body.utf8.allSatisfy(alphabet.contains) else { return false }
        return String(rest.suffix(checksumLength)) == checksum(of: body)
    }

    static func checksum(of body: String) -> String {
        var value = UInt64(CRC32.checksum(Array(body.utf8)))
        var digits: [UInt8] = []
        for _ in 0..<checksumLength {
            digits.append(alphabet[Int(value % 62)])
            value /= 62
        }
        return String(decoding: digits.reversed(), as: UTF8.self)
    }

    /// The stored form of a token.
    public static func hash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Data(token.utf8))) }
}

/// CRC-32 (IEEE 802.3), for the token's checksum.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

extension Database {
    /// The current owner token's SHA-256; nil before the first start made one.
    func adminTokenHash() async throws -> [UInt8]? {
        guard let stored = try await setting(AdminToken.setting) else { return nil }
        guard let hash = Hex.decode(stored), hash.count == 32 else { throw StorageError.corrupt("admin token hash") }
        return hash
    }

    /// Makes `token` the owner token, replacing any other (which stops working at once), audited
    /// as `admin_token.rotate` when it replaced one. False when it was already the token.
    @discardableResult
    public func replaceAdminToken(with token: String, now: Int64, actor: AuditActor) async throws -> Bool {
        let hash = AdminToken.hash(token)
        return try await write { db in
            let existing = try await db.raw("SELECT value FROM settings WHERE name = \(bind: AdminToken.setting)").first(decodingColumn: "value", as: String.self)
            guard existing != hash else { return false }
            if existing == nil {
                try await db.raw("INSERT INTO settings (name, value) VALUES (\(bind: AdminToken.setting), \(bind: hash))").run()
            } else {
                try await db.raw("UPDATE settings SET value = \(bind: hash) WHERE name = \(bind: AdminToken.setting)").run()
                try await Self.audit(db, at: now, actor: actor, action: "admin_token.rotate", tenantId: nil, target: nil)
            }
            return true
        }
    }
}

extension AdminService {
    /// Whether `token` is the owner token: its SHA-256 against the stored one, in constant time.
    /// The hash is read on each request (admin requests are few), so a rotation by another process
    /// or by `keylight token rotate` holds at once.
    func isOwnerToken(_ token: String) async throws -> Bool {
        guard let stored = try await database.adminTokenHash() else { return false }
        return ConstantTime.equals(Array(SHA256.hash(data: Data(token.utf8))), stored)
    }
}
