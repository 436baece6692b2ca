extension RandomNumberGenerator {
    /// `count` random bytes from 64-bit draws: `UInt8.random(in:)` would draw 64 bits per byte,
    /// and the system generator makes a system call per draw.
    package mutating func bytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            var word = next()
            for _ in 0..<min(8, count - out.count) {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }
}
