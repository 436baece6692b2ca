/// The module grid while a symbol is built: function patterns first, then the data in the
/// zigzag order, then a mask and the format (and version) information.
struct QRMatrix {
    let version: Int
    let size: Int
    var dark: [Bool]
    /// Modules that belong to function patterns or format/version areas: never data, never masked.
    var reserved: [Bool]

    init(version: Int) {
        self.version = version
        size = QRVersion.size(version)
        dark = Array(repeating: false, count: size * size)
        reserved = Array(repeating: false, count: size * size)
    }

    private mutating func set(_ x: Int, _ y: Int, _ isDark: Bool) {
        dark[y * size + x] = isDark
        reserved[y * size + x] = true
    }

    // MARK: Function patterns (ISO/IEC 18004 §6.3)

    mutating func placeFunctionPatterns() {
        for index in 0..<size {
            set(6, index, index % 2 == 0)  // timing patterns
            set(index, 6, index % 2 == 0)
        }
        placeFinder(3, 3)
        placeFinder(size - 4, 3)
        placeFinder(3, size - 4)
        let positions = QRVersion.alignmentPositions(version)
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                // Not over the three finder patterns.
                if (i == 0 && j == 0) || (i == 0 && j == positions.count - 1) || (i == positions.count - 1 && j == 0) { continue }
                placeAlignment(x, y)
            }
        }
        // Reserve the format areas (written after masking) and place the version blocks.
        writeFormat(bits: 0)
        placeVersion()
    }

    /// A finder pattern centred on (x, y) with its light separator.
    private mutating func placeFinder(_ cx: Int, _ cy: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = cx + dx, y = cy + dy
                guard (0..<size).contains(x), (0..<size).contains(y) else { continue }
                let distance = max(abs(dx), abs(dy))
                set(x, y, distance != 2 && distance != 4)
            }
        }
    }

    private mutating func placeAlignment(_ cx: Int, _ cy: Int) {
        for dy in -2...2 {
            for dx in -2...2 { set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) }
        }
    }

    /// The 15 format bits, twice, plus the dark module (§7.9).
    mutating func writeFormat(bits: Int) {
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0...5 { set(8, index, bit(index)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for index in 9..<15 { set(14 - index, 8, bit(index)) }
        for index in 0..<8 { set(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { set(8, size - 15 + index, bit(index)) }
        set(8, size - 8, true)
    }

    /// Versions 7 and up: 18 bits (6 data + 12 BCH) in two 6×3 blocks (§7.10).
    private mutating func placeVersion() {
        guard version >= 7 else { return }
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        let bits = version << 12 | remainder
        for index in 0..<18 {
            let isDark = (bits >> index) & 1 == 1
            let a = size - 11 + index % 3, b = index / 3
            set(a, b, isDark)
            set(b, a, isDark)
        }
    }

    /// Format information: level and mask, BCH(15,5), XOR-masked with 0x5412 (§7.9.1).
    static func formatBits(level: QRErrorCorrection, mask: Int) -> Int {
        let data = level.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        return (data << 10 | remainder) ^ 0x5412
    }

    // MARK: Data (§7.7.3)

    /// Codeword bits in two-module columns, right to left, alternating upwards and downwards,
    /// skipping the vertical timing column and every reserved module.
    mutating func placeData(_ codewords: [UInt8]) {
        var bitIndex = 0
        let totalBits = codewords.count * 8
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for step in 0..<size {
                for offset in 0..<2 {
                    let x = right - offset
                    let upward = ((right + 1) & 2) == 0
                    let y = upward ? size - 1 - step : step
                    guard !reserved[y * size + x] else { continue }
                    if bitIndex < totalBits {
                        dark[y * size + x] = (codewords[bitIndex >> 3] >> (7 - UInt8(bitIndex & 7))) & 1 == 1
                        bitIndex += 1
                    }
                    // Remainder bits stay light.
                }
            }
            right -= 2
        }
    }

    // MARK: Masks (§7.8)

    static func maskBit(_ mask: Int, x: Int, y: Int) -> Bool {
        switch mask {
        case 0: (x + y) % 2 == 0
        case 1: y % 2 == 0
        case 2: x % 3 == 0
        case 3: (x + y) % 3 == 0
        case 4: (x / 3 + y / 2) % 2 == 0
        case 5: x * y % 2 + x * y % 3 == 0
        case 6: (x * y % 2 + x * y % 3) % 2 == 0
        default: ((x + y) % 2 + x * y % 3) % 2 == 0
        }
    }

    /// Flips the data modules under `mask` and writes the matching format information.
    mutating func apply(mask: Int, level: QRErrorCorrection) {
        for y in 0..<size {
            for x in 0..<size where !reserved[y * size + x] && Self.maskBit(mask, x: x, y: y) {
                dark[y * size + x].toggle()
            }
        }
        writeFormat(bits: Self.formatBits(level: level, mask: mask))
    }

    /// The penalty score of the symbol under `mask` (§7.8.3): lower is easier to read.
    func penalty(mask: Int, level: QRErrorCorrection) -> Int {
        var masked = self
        masked.apply(mask: mask, level: level)
        return masked.penaltyScore()
    }

    func penaltyScore() -> Int {
        var score = 0
        let grid = dark
        let n = size
        func module(_ x: Int, _ y: Int, rows: Bool) -> Bool { rows ? grid[y * n + x] : grid[x * n + y] }
        for rows in [true, false] {
            for line in 0..<n {
                // N1: runs of five or more of one colour.
                var run = 1
                for index in 1..<n {
                    if module(index, line, rows: rows) == module(index - 1, line, rows: rows) {
                        run += 1
                        if index == n - 1, run >= 5 { score += 3 + run - 5 }
                    } else {
                        if run >= 5 { score += 3 + run - 5 }
                        run = 1
                    }
                }
                // N3: 1:1:3:1:1 finder-like patterns with four light modules on one side
                // (modules outside the symbol count as light).
                for start in -4..<n {
                    func at(_ offset: Int) -> Bool {
                        let index = start + offset
                        return (0..<n).contains(index) ? module(index, line, rows: rows) : false
                    }
                    let core = at(4) && !at(5) && at(6) && at(7) && at(8) && !at(9) && at(10)
                    guard core else { continue }
                    let before = !at(0) && !at(1) && !at(2) && !at(3)
                    let after = !at(11) && !at(12) && !at(13) && !at(14)
                    if before || after { score += 40 }
                }
            }
        }
        // N2: 2×2 blocks of one colour.
        for y in 0..<(n - 1) {
            for x in 0..<(n - 1) {
                let colour = grid[y * n + x]
                if grid[y * n + x + 1] == colour && grid[(y + 1) * n + x] == colour && grid[(y + 1) * n + x + 1] == colour { score += 3 }
            }
        }
        // N4: how far the share of dark modules is from half, in steps of 5%.
        let darkCount = grid.reduce(0) { $0 + ($1 ? 1 : 0) }
        let total = n * n
        let k = (abs(darkCount * 20 - total * 10) + total - 1) / total - 1
        score += max(0, k) * 10
        return score
    }
}
