/// Comparisons whose running time does not depend on where two secrets differ.
public enum ConstantTime {
    /// True when `lhs` and `rhs` hold the same bytes.
    ///
    /// Every byte is visited whatever the contents, so the time taken reveals only the lengths,
    /// which are public for every secret Keylight compares (hashes, HMACs, pairing secrets).
    @inline(never)
    public static func equals<L: Collection<UInt8>, R: Collection<UInt8>>(_ lhs: L, _ rhs: R) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) {
            difference |= left ^ right
        }
        return isZero(difference)
    }

    /// True when the UTF-8 bytes of two strings are the same, in constant time over their length.
    public static func equals(_ lhs: String, _ rhs: String) -> Bool {
        equals(Array(lhs.utf8), Array(rhs.utf8))
    }

    // Kept out of line so the optimiser cannot fold the accumulated difference into an early exit.
    @inline(never)
    private static func isZero(_ value: UInt8) -> Bool {
        value == 0
    }
}
