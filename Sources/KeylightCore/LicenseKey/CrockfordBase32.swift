/// Crockford's base-32 alphabet (`0-9A-HJKMNP-TV-Z`): no I, L, O or U, so keys read aloud or
/// typed from paper are not mistaken.
enum CrockfordBase32 {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// Membership by table lookup, for the format check of every incoming key.
    private static let members: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in alphabet { table[Int(byte)] = true }
        return table
    }()

    static func contains(_ byte: UInt8) -> Bool { members[Int(byte)] }

    /// Encodes `bytes` big-endian, five bits per character; `bytes.count * 8` must be a multiple of 5.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        precondition((bytes.count * 8).isMultiple(of: 5), "whole characters only")
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 8 / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1F)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        return out
    }
}
