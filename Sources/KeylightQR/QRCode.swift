/// A QR code symbol (ISO/IEC 18004, model 2): byte-mode data, error correction L/M/Q/H,
/// versions 1 to 40, and the mask with the lowest penalty score.
public struct QRCode: Sendable, Hashable {
    public let version: Int
    public let errorCorrection: QRErrorCorrection
    /// The mask pattern chosen (0…7).
    public let mask: Int
    /// Modules per side.
    public let size: Int
    /// Row-major; true = dark.
    let modules: [Bool]

    /// Why a payload cannot be encoded.
    public struct EncodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        static func tooLong(_ bytes: Int, _ level: QRErrorCorrection) -> Self {
            EncodingError(description: "\(bytes) bytes do not fit a version-40 QR code at error correction \(level); the most is \(QRCode.capacity(version: 40, level: level)).")
        }
        static let badVersionRange = EncodingError(description: "QR versions are 1 to 40.")
    }

    /// Encodes `bytes` in byte mode in the smallest version from `minimumVersion` that fits.
    /// With `boostErrorCorrection`, the level is raised as far as that version allows for free.
    public init(
        bytes: [UInt8], errorCorrection: QRErrorCorrection = .medium, minimumVersion: Int = 1,
        boostErrorCorrection: Bool = false, mask fixedMask: Int? = nil
    ) throws(EncodingError) {
        guard QRVersion.range.contains(minimumVersion), fixedMask.map({ (0...7).contains($0) }) ?? true else { throw .badVersionRange }
        guard let version = (minimumVersion...40).first(where: { bytes.count <= Self.capacity(version: $0, level: errorCorrection) }) else {
            throw .tooLong(bytes.count, errorCorrection)
        }
        var level = errorCorrection
        if boostErrorCorrection {
            for candidate in QRErrorCorrection.allCases where candidate > level && bytes.count <= Self.capacity(version: version, level: candidate) {
                level = candidate
            }
        }
        let codewords = Self.codewords(for: bytes, version: version, level: level)
        var matrix = QRMatrix(version: version)
        matrix.placeFunctionPatterns()
        matrix.placeData(codewords)
        let mask = fixedMask ?? (0..<8).min { matrix.penalty(mask: $0, level: level) < matrix.penalty(mask: $1, level: level) }!
        matrix.apply(mask: mask, level: level)
        self.version = version
        self.errorCorrection = level
        self.mask = mask
        self.size = matrix.size
        self.modules = matrix.dark
    }

    /// Encodes text as UTF-8.
    public init(text: String, errorCorrection: QRErrorCorrection = .medium, minimumVersion: Int = 1, boostErrorCorrection: Bool = false) throws(EncodingError) {
        try self.init(bytes: Array(text.utf8), errorCorrection: errorCorrection, minimumVersion: minimumVersion, boostErrorCorrection: boostErrorCorrection)
    }

    /// Whether the module at column `x`, row `y` is dark (outside the symbol: light).
    public subscript(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }

    /// Most bytes a symbol holds in byte mode.
    public static func capacity(version: Int, level: QRErrorCorrection) -> Int {
        let bits = level.dataCodewords(version: version) * 8 - 4 - QRVersion.byteCountBits(version)
        return max(0, bits / 8)
    }

    /// Data bits (mode, count, bytes, terminator, padding) split into blocks, error correction
    /// added, and the blocks interleaved (ISO/IEC 18004 §7.4–7.6).
    static func codewords(for bytes: [UInt8], version: Int, level: QRErrorCorrection) -> [UInt8] {
        let capacity = level.dataCodewords(version: version)
        var bits = BitBuffer()
        bits.append(0b0100, count: 4)
        bits.append(bytes.count, count: QRVersion.byteCountBits(version))
        for byte in bytes { bits.append(Int(byte), count: 8) }
        bits.append(0, count: min(4, capacity * 8 - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var data = bits.bytes
        var pad: UInt8 = 0xEC
        while data.count < capacity {
            data.append(pad)
            pad ^= 0xEC ^ 0x11
        }

        let blockCount = level.blockCount(version: version)
        let ecLength = level.ecCodewordsPerBlock(version: version)
        let raw = QRVersion.rawCodewords(version)
        let shortBlocks = blockCount - raw % blockCount
        let shortDataLength = raw / blockCount - ecLength
        let rs = QRReedSolomon(degree: ecLength)
        var blocks: [[UInt8]] = []
        var offset = 0
        for index in 0..<blockCount {
            let length = shortDataLength + (index < shortBlocks ? 0 : 1)
            blocks.append(Array(data[offset..<(offset + length)]))
            offset += length
        }
        let ec = blocks.map { rs.remainder($0) }
        var result: [UInt8] = []
        result.reserveCapacity(raw)
        for column in 0...shortDataLength {
            for block in blocks where column < block.count { result.append(block[column]) }
        }
        for column in 0..<ecLength {
            for block in ec { result.append(block[column]) }
        }
        return result
    }
}

/// Bits, most significant first.
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count length: Int) {
        for shift in stride(from: length - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[count / 8] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}
