/// Reed–Solomon error correction over GF(2⁸) with the QR polynomial x⁸+x⁴+x³+x²+1.
struct QRReedSolomon: Sendable {
    /// Generator polynomial coefficients (highest degree first, leading 1 omitted).
    let generator: [UInt8]

    init(degree: Int) {
        var coefficients = [UInt8](repeating: 0, count: degree)
        coefficients[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            // Multiply by (x - root).
            for index in 0..<degree {
                coefficients[index] = Self.multiply(coefficients[index], root)
                if index + 1 < degree { coefficients[index] ^= coefficients[index + 1] }
            }
            root = Self.multiply(root, 0x02)
        }
        generator = coefficients
    }

    /// The error-correction codewords for `data`.
    func remainder(_ data: some Sequence<UInt8>) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for index in result.indices { result[index] ^= Self.multiply(generator[index], factor) }
        }
        return result
    }

    /// Multiplication in GF(2⁸) modulo 0x11D (Russian peasant).
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var product: UInt16 = 0
        var a = UInt16(x)
        var b = y
        while b != 0 {
            if b & 1 != 0 { product ^= a }
            a <<= 1
            if a & 0x100 != 0 { a ^= 0x11D }
            b >>= 1
        }
        return UInt8(product)
    }
}
