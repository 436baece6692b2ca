/// Draws QR codes as SVG, PNG or terminal text. Make one with the look you want and reuse it
/// for every code: its settings and tables are prepared once.
public struct QRRenderer: Sendable {
    /// Light modules around the symbol (the standard asks for 4).
    public var quietZone: Int
    /// Pixels per module in PNGs.
    public var scale: Int
    public var darkColor: String
    public var lightColor: String

    public init(quietZone: Int = 4, scale: Int = 8, darkColor: String = "#000000", lightColor: String = "#ffffff") {
        self.quietZone = max(0, quietZone)
        self.scale = max(1, scale)
        self.darkColor = darkColor
        self.lightColor = lightColor
    }

    /// An SVG document: one path of unit squares on a light background, scalable without blur.
    public func svg(_ code: QRCode) -> String {
        let side = code.size + 2 * quietZone
        var path = ""
        for y in 0..<code.size {
            var x = 0
            while x < code.size {
                guard code[x, y] else { x += 1; continue }
                // One rectangle per horizontal run of dark modules.
                var end = x
                while end < code.size && code[end, y] { end += 1 }
                path += "M\(x + quietZone),\(y + quietZone)h\(end - x)v1h-\(end - x)z"
                x = end
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges" role="img" aria-label="QR code">\
            <rect width="\(side)" height="\(side)" fill="\(lightColor)"/><path fill="\(darkColor)" d="\(path)"/></svg>
            """
    }

    /// A PNG image (1-bit greyscale) at `scale` pixels per module.
    public func png(_ code: QRCode) -> [UInt8] {
        let modulesPerSide = code.size + 2 * quietZone
        let width = modulesPerSide * scale
        let rowBytes = (width + 7) / 8
        var pixels: [UInt8] = []
        pixels.reserveCapacity((rowBytes + 1) * width)
        for moduleY in 0..<modulesPerSide {
            var row = [UInt8](repeating: 0, count: rowBytes)
            for px in 0..<width where !code[px / scale - quietZone, moduleY - quietZone] {
                row[px >> 3] |= 0x80 >> UInt8(px & 7)  // 1 = white
            }
            for _ in 0..<scale {
                pixels.append(0)  // filter: none
                pixels += row
            }
        }
        return PNG.encode(width: width, height: width, bitDepth: 1, colorType: 0, scanlines: pixels)
    }

    /// Text for a terminal: two module rows per line with half blocks. `inverted` draws dark
    /// modules as spaces, for terminals with a dark background.
    public func terminal(_ code: QRCode, inverted: Bool = true) -> String {
        let low = -quietZone, high = code.size + quietZone
        // Whether the terminal draws ink for a module; rows past the bottom draw nothing.
        func ink(_ x: Int, _ y: Int) -> Bool { y < high && code[x, y] != inverted }
        var lines: [String] = []
        var y = low
        while y < high {
            var line = ""
            for x in low..<high {
                switch (ink(x, y), ink(x, y + 1)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
            y += 2
        }
        return lines.joined(separator: "\n")
    }
}
