/// How much of a QR code may be damaged and still read (ISO/IEC 18004 §6.5.1).
public enum QRErrorCorrection: Int, CaseIterable, Sendable, Comparable {
    /// About 7% of codewords recoverable.
    case low
    /// About 15%.
    case medium
    /// About 25%.
    case quartile
    /// About 30%.
    case high

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The two format-information bits (L = 01, M = 00, Q = 11, H = 10).
    var formatBits: Int {
        switch self {
        case .low: 1
        case .medium: 0
        case .quartile: 3
        case .high: 2
        }
    }

    /// Error-correction codewords in each block, by version (index 0 unused); ISO/IEC 18004 Table 9.
    private static let codewordsPerBlock: [[Int]] = [
        [-1, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [-1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
        [-1, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [-1, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
    ]

    /// Error-correction blocks, by version (index 0 unused); ISO/IEC 18004 Table 9.
    private static let blockCounts: [[Int]] = [
        [-1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
        [-1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
        [-1, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
        [-1, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
    ]

    func ecCodewordsPerBlock(version: Int) -> Int { Self.codewordsPerBlock[rawValue][version] }
    func blockCount(version: Int) -> Int { Self.blockCounts[rawValue][version] }

    /// Data codewords a symbol of `version` holds at this level.
    func dataCodewords(version: Int) -> Int {
        QRVersion.rawCodewords(version) - ecCodewordsPerBlock(version: version) * blockCount(version: version)
    }
}

/// Geometry shared by every symbol of one version (1…40).
enum QRVersion {
    static let range = 1...40

    /// Modules per side.
    static func size(_ version: Int) -> Int { 17 + 4 * version }

    /// Codewords (data + error correction) the symbol's data area holds: every module that is
    /// not a function pattern, format or version information, in whole bytes.
    static func rawCodewords(_ version: Int) -> Int {
        var modules = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            modules -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { modules -= 36 }
        }
        return modules / 8
    }

    /// Centre coordinates of the alignment patterns along each axis (ISO/IEC 18004 Annex E).
    static func alignmentPositions(_ version: Int) -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        var position = size(version) - 7
        var tail: [Int] = []
        for _ in 0..<(count - 1) {
            tail.insert(position, at: 0)
            position -= step
        }
        positions += tail
        return positions
    }

    /// Bits of the byte-mode character count field.
    static func byteCountBits(_ version: Int) -> Int { version <= 9 ? 8 : 16 }
}
