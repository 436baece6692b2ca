import Foundation
import KeylightTestSupport
@testable import KeylightQR
import Testing

/// The QR encoder against the standard's structure, and its PNGs read back by an independent
/// decoder (zxing-cpp; `.ci/run` installs it) for every level and lengths up to version 40.
@Suite(.timeLimit(.minutes(3))) struct QRCodeTests {
    @Test func tablesAreConsistentForEveryVersionAndLevel() {
        for version in QRVersion.range {
            for level in QRErrorCorrection.allCases {
                let blocks = level.blockCount(version: version), ec = level.ecCodewordsPerBlock(version: version)
                let raw = QRVersion.rawCodewords(version)
                // Every block carries data as well as error correction.
                #expect(raw / blocks - ec > 0, "v\(version) \(level)")
                #expect(level.dataCodewords(version: version) == raw - blocks * ec)
            }
            // More protection, less room.
            let capacities = QRErrorCorrection.allCases.map { QRCode.capacity(version: version, level: $0) }
            #expect(capacities == capacities.sorted(by: >), "v\(version): \(capacities)")
        }
        // Known capacities in byte mode (ISO/IEC 18004 Table 7).
        #expect(QRCode.capacity(version: 1, level: .low) == 17 && QRCode.capacity(version: 1, level: .high) == 7)
        #expect(QRCode.capacity(version: 10, level: .medium) == 213 && QRCode.capacity(version: 40, level: .low) == 2_953)
        #expect(QRCode.capacity(version: 40, level: .high) == 1_273 && QRCode.capacity(version: 25, level: .quartile) == 715)
        #expect(QRVersion.rawCodewords(1) == 26 && QRVersion.rawCodewords(40) == 3_706)
        #expect(QRVersion.alignmentPositions(2) == [6, 18] && QRVersion.alignmentPositions(7) == [6, 22, 38])
        #expect(QRVersion.alignmentPositions(32) == [6, 34, 60, 86, 112, 138])
        #expect(QRVersion.alignmentPositions(40) == [6, 30, 58, 86, 114, 142, 170])
    }

    @Test func reedSolomonMatchesTheStandardsExample() {
        // ISO/IEC 18004 Annex I: "01234567" at 1-M — data codewords and their 10 EC codewords.
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        #expect(QRReedSolomon(degree: 10).remainder(data) == [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
        #expect(QRReedSolomon.multiply(0x80, 0x02) == 0x1D && QRReedSolomon.multiply(0x02, 0x02) == 0x04)
    }

    @Test func formatAndVersionInformation() {
        // Format strings from the standard's Table C.1 (after the 0x5412 mask).
        #expect(QRMatrix.formatBits(level: .medium, mask: 0) == 0b101010000010010)
        #expect(QRMatrix.formatBits(level: .low, mask: 4) == 0b110011000101111)
        #expect(QRMatrix.formatBits(level: .high, mask: 7) == 0b000100000111011)
        // Version 7's 18-bit block is 000111 110010 010100 (Table D.1).
        let code = try! QRCode(bytes: Array(repeating: 0x41, count: 150), errorCorrection: .low)
        #expect(code.version == 7)
        var bits = 0
        for index in 0..<18 where code[code.size - 11 + index % 3, index / 3] { bits |= 1 << index }
        #expect(bits == 0b000111_110010_010100)
    }

    @Test func functionPatternsAndMaskChoice() throws {
        let code = try QRCode(text: "keylight://trust/abc", errorCorrection: .medium)
        #expect(code.version == 2 && code.size == 25)
        // Finder pattern corners and the timing pattern.
        #expect(code[0, 0] && code[6, 0] && code[0, 6] && !code[1, 1] && code[2, 2] && !code[7, 0])
        #expect(code[code.size - 1, 0] && code[0, code.size - 1] && code[8, code.size - 8])
        #expect((8..<(code.size - 8)).allSatisfy { code[$0, 6] == ($0 % 2 == 0) })
        // The chosen mask has the lowest penalty of the eight.
        let penalties = try (0..<8).map { try QRCode(bytes: Array("keylight://trust/abc".utf8), errorCorrection: .medium, mask: $0) }.map { code in
            var matrix = QRMatrix(version: code.version)
            matrix.dark = code.modules
            return matrix.penaltyScore()
        }
        #expect(penalties[code.mask] == penalties.min())
    }

    @Test func errors() {
        #expect(throws: QRCode.EncodingError.self) { try QRCode(bytes: Array(repeating: 0, count: 2_954), errorCorrection: .low) }
        #expect(throws: QRCode.EncodingError.self) { try QRCode(bytes: Array(repeating: 0, count: 1_274), errorCorrection: .high) }
        #expect(throws: QRCode.EncodingError.self) { try QRCode(bytes: [1], minimumVersion: 41) }
        #expect(throws: QRCode.EncodingError.self) { try QRCode(bytes: [1], minimumVersion: 0) }
        #expect((try? QRCode(bytes: Array(repeating: 0, count: 2_953), errorCorrection: .low))?.version == 40)
    }

    @Test func renderers() throws {
        let renderer = QRRenderer(quietZone: 4, scale: 3)
        let code = try QRCode(text: "hello", errorCorrection: .high)
        let png = renderer.png(code)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let width = (code.size + 8) * 3
        #expect(Array(png[16..<24]) == [0, 0, UInt8(width >> 8), UInt8(width & 0xFF), 0, 0, UInt8(width >> 8), UInt8(width & 0xFF)])
        #expect(CRC32.checksum(Array("IEND".utf8)) == 0xAE42_6082)
        let svg = renderer.svg(code)
        #expect(svg.hasPrefix("<svg") && svg.contains("viewBox=\"0 0 \(code.size + 8) \(code.size + 8)\""))
        let text = renderer.terminal(code)
        #expect(text.split(separator: "\n").count == (code.size + 8 + 1) / 2)
        #expect(text.split(separator: "\n").allSatisfy { $0.count == code.size + 8 })
    }

    /// Payload lengths that land on versions 1…40 at each level.
    static func lengths(for level: QRErrorCorrection) -> [Int] {
        var lengths = Set([1, 2])
        for version in QRVersion.range { lengths.insert(QRCode.capacity(version: version, level: level)) }
        return lengths.sorted()
    }

    // platform: the independent decoder is a Python program, run as a child process (macOS, Linux).
    #if os(macOS) || os(Linux)
    @Test(.enabled(if: PrerequisiteGate.enabled(Decoder.available), "needs python3 with zxing-cpp and Pillow (.ci/run installs them)"),
          arguments: QRErrorCorrection.allCases)
    func independentDecoderReadsEveryVersion(level: QRErrorCorrection) async throws {
        let directory = try temporaryDirectory("keylight-qr")
        defer { try? FileManager.default.removeItem(at: directory) }
        let renderer = QRRenderer(quietZone: 4, scale: 4)
        let seed = Mutator.seed("qr payloads \(level)")
        var generator = SeededGenerator(seed: seed)
        var expected: [String: (bytes: [UInt8], version: Int)] = [:]
        var versions = Set<Int>()
        for length in Self.lengths(for: level) {
            // Random bytes (all 256 values), so byte mode is exercised beyond text.
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let code = try QRCode(bytes: bytes, errorCorrection: level)
            versions.insert(code.version)
            let path = directory.appendingPathComponent("\(level)-\(length).png").path
            try Data(renderer.png(code)).write(to: URL(fileURLWithPath: path))
            expected[path] = (bytes, code.version)
        }
        #expect(versions == Set(QRVersion.range))
        let results = try await Decoder.decode(Array(expected.keys))
        #expect(results.count == expected.count)
        for result in results {
            let path = try #require(result["file"] as? String)
            #expect(result["ok"] as? Bool == true, "zxing could not read \(path)")
            #expect(result["bytes_hex"] as? String == expected[path].map { $0.bytes.map { String(format: "%02x", $0) }.joined() }, "\(path), seed \(seed)")
            // The decoder read the symbol at the version and level it was drawn with.
            #expect(result["version"] as? Int == expected[path]?.version, "\(path): version \(result["version"] ?? "none")")
            #expect(result["ec_level"] as? String == ["low": "L", "medium": "M", "quartile": "Q", "high": "H"]["\(level)"], "\(path)")
            #expect(result["valid"] as? Bool == true, "\(path)")
        }
    }
    #endif
}

#if os(macOS) || os(Linux)
/// Runs Tests/QR/decode_qr.py.
enum Decoder {
    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("QR/decode_qr.py")
    }

    static let available: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import zxingcpp, PIL"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    static func decode(_ files: [String]) async throws -> [[String: Any]] {
        let output = try await ChildProcess.python(script.path, files, mergeStandardError: false)
        return String(decoding: output.stdout, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
#endif
