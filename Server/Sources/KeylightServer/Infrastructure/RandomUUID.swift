/// Random (version 4) UUIDs as lowercase text, made from the standard library's generator.
///
/// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for every value: three
/// system calls, which a request id on every answer paid (about 4 µs, as much as a sixth of what
/// `/healthz` costs in all). The system generator asks the kernel with `getrandom` instead.
enum RandomUUID {
    /// A new random UUID, `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`.
    static func lowercaseString() -> String {
        var generator = SystemRandomNumberGenerator()
        return lowercaseString(using: &generator)
    }

    /// A new random UUID without its dashes (32 hex digits), for ids such as `evt_…`: what
    /// `UUID().uuidString.lowercased()` with the dashes replaced gave, at a small part of the cost
    /// (Foundation's `replacingOccurrences` alone was about 50,000 instructions an activation).
    static func compactLowercaseString() -> String {
        var generator = SystemRandomNumberGenerator()
        return lowercaseString(using: &generator, dashes: false)
    }

    /// The same from `generator`; tests pass a seeded one.
    static func lowercaseString<Generator: RandomNumberGenerator>(using generator: inout Generator, dashes: Bool = true) -> String {
        // Version 4 in the high nibble of byte 6, the RFC 4122 variant (10) in the top bits of byte 8.
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        let low = (generator.next() as UInt64) & ~(0xC000_0000_0000_0000 as UInt64) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: dashes ? 36 : 32) { buffer in
            var index = 0
            func hex(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF
                    buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                    index += 1
                }
            }
            func dash() {
                guard dashes else { return }
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            hex(high >> 32, digits: 8); dash()
            hex(high >> 16, digits: 4); dash()
            hex(high, digits: 4); dash()
            hex(low >> 48, digits: 4); dash()
            hex(low, digits: 12)
            return index
        }
    }
}
