import Foundation
@testable import KeylightServer
import NIOCore
import SQLiteKit
import SQLiteNIO
import Testing

@Suite struct SQLiteBindEncoderTests {
    private enum Plan: String, Encodable { case monthly }
    // One key: JSONEncoder does not keep the order of several from one call to the next.
    private struct Details: Encodable { var seats = 3 }

    /// Every kind of bind the storage passes becomes what sqlite-kit's own encoder makes of it:
    /// the fast path for text, integers and flags, sqlite-kit's for the rest (nils included).
    @Test func matchesSQLiteKitsEncoder() throws {
        let values: [any Encodable & Sendable] = [
            "", "text with ' and \u{1F511}", String?.some("wrapped"), String?.none,
            0, -1, Int.max, Int.min, Int64(1_764_000_000), Int64?.some(-5), Int64?.none,
            true, false, Bool?.some(true), Bool?.none,
            Int32(7), Int32?.none, 2.5, Double?.none, Data([0, 1, 255]), Plan.monthly, Plan?.none, Plan?.some(.monthly),
            Details(), Details?.none, String??.some(.none),
        ]
        let ours = SQLiteBindEncoder()
        let theirs = SQLiteDataEncoder()
        for value in values {
            let expected = try theirs.encode(value)
            #expect(try ours.encode(value) == expected, "\(type(of: value)) \(value)")
        }
        // What the fast path must give, spelled out (so a match of two wrong answers fails too).
        #expect(try ours.encode("a") == .text("a"))
        #expect(try ours.encode(Int64(42)) == .integer(42))
        #expect(try ours.encode(true) == .integer(1))
        #expect(try ours.encode(String?.none) == .null)
        #expect(try ours.encode(Int64?.none) == .null)
        #expect(try ours.encode(Plan?.none) == .null)
        #expect(try ours.encode(Plan?.some(.monthly)) == .text("monthly"))
        #expect(try ours.encode(Data([1])) == .blob(ByteBuffer(bytes: [1])))
        #expect(try ours.encode(Details()) == .text(#"{"seats":3}"#))
    }
}
