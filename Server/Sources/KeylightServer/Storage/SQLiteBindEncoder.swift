import SQLiteKit
import SQLiteNIO

/// A statement's binds as SQLite values, for the kept connections (hot writes, point reads).
///
/// sqlite-kit's `SQLiteDataEncoder` first asks each value whether it conforms to
/// `SQLiteDataConvertible`: a protocol-conformance cast per bind, about 50,000 instructions an
/// activation in all. Nearly every bind is text, an integer or a flag, which are matched here by
/// their concrete type (a cheaper cast) and converted exactly as sqlite-nio converts them, and a
/// nil of any type is NULL, as sqlite-kit binds it; anything else goes to sqlite-kit's encoder.
struct SQLiteBindEncoder: Sendable {
    private let encoder = SQLiteDataEncoder()

    func encode(_ value: any Encodable) throws -> SQLiteData {
        switch value {
        case let text as String: .text(text)
        case let number as Int64: .integer(Int(number))
        case let flag as Bool: .integer(flag ? 1 : 0)
        case let number as Int: .integer(number)
        // Any nil: the runtime casts a nil of every optional type to any other optional type, and
        // sqlite-kit's encoder binds every nil as NULL. (A non-nil value here is not text.)
        case let optional as String?: optional.map(SQLiteData.text) ?? .null
        default: try encoder.encode(value)
        }
    }
}
