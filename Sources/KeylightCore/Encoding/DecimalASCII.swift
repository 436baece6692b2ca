extension Array where Element == UInt8 {
    /// Appends the decimal ASCII form of `value`, as `String(value)` spells it, without
    /// allocating a String: signed payloads are built on the hot path of verification.
    mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(UInt8(ascii: "-")) }
        var remaining = value.magnitude  // magnitude, so Int64.min does not overflow
        let start = count
        repeat {
            append(UInt8(ascii: "0") + UInt8(remaining % 10))
            remaining /= 10
        } while remaining > 0
        self[start..<count].reverse()
    }

    /// Appends `text` followed by the `|` separator of Keylight's signed payloads.
    mutating func appendField(_ text: String) {
        append(contentsOf: text.utf8)
        append(UInt8(ascii: "|"))
    }
}
