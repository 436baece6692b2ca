import Foundation

/// A provider's event body read as plain JSON: the three providers nest what Keylight needs in
/// different places, and each reader takes only the fields it names, tolerating every other shape.
struct EventJSON: @unchecked Sendable {
    // @unchecked: the value holds only what JSONSerialization makes (dictionaries, arrays,
    // strings, numbers, NSNull), immutable once parsed.
    let value: Any?

    init(_ value: Any?) { self.value = value }

    /// The body as a JSON object, or nil when it is not one.
    static func parse(_ bytes: [UInt8]) -> EventJSON? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)), object is [String: Any] else { return nil }
        return EventJSON(object)
    }

    subscript(key: String) -> EventJSON { EventJSON((value as? [String: Any])?[key]) }

    var array: [EventJSON] { (value as? [Any])?.map(EventJSON.init) ?? [] }
    var isObject: Bool { value is [String: Any] }

    /// A string, or nil (numbers are not strings here: a field's type is part of its meaning).
    var string: String? { value as? String }

    /// A non-empty id Keylight will store: at most 255 bytes. Lemon Squeezy's ids are numbers in
    /// attributes and strings in `data.id`; both read as their decimal text.
    var id: String? {
        let text: String?
        if let string = value as? String {
            text = string
        } else if let number = value as? NSNumber, !isBoolean, let integer = Int64(exactly: number.doubleValue), integer >= 0 {
            text = String(integer)
        } else {
            text = nil
        }
        guard let text, !text.isEmpty, text.utf8.count <= 255 else { return nil }
        return text
    }

    /// A non-empty string id of at most 255 bytes (where the provider's ids are never numbers).
    var stringId: String? {
        guard let text = value as? String, !text.isEmpty, text.utf8.count <= 255 else { return nil }
        return text
    }

    /// JSON's true and false (Foundation bridges 0 and 1 to Bool too, so the number's type decides).
    private var isBoolean: Bool {
        (value as? NSNumber).map { String(cString: $0.objCType) == "c" } ?? false
    }

    var bool: Bool? {
        guard isBoolean, let number = value as? NSNumber else { return nil }
        return number.boolValue
    }

    /// A whole number in Int range (a fraction or a string is nil).
    var int: Int? {
        guard let number = value as? NSNumber, !isBoolean else { return nil }
        let double = number.doubleValue
        guard double.rounded() == double, abs(double) < 1e15 else { return nil }
        return Int(double)
    }

    /// A line's quantity: 1 when absent (Lemon Squeezy leaves it out of its documentation), else
    /// the whole number given; anything else (a fraction, text) is 0, so the line mints nothing.
    var quantity: Int {
        guard value != nil, !(value is NSNull) else { return 1 }
        return int ?? 0
    }

    /// An RFC 3339 time (`2024-04-12T10:18:49.621022Z`, any fraction, `Z` or an offset) as Unix
    /// seconds, within 1970…2200; nil otherwise.
    var time: Int64? { string.flatMap(Self.unixSeconds(rfc3339:)) }

    static func unixSeconds(rfc3339 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1970...2200).contains(year), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var index = 19
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > start else { return nil }
        }
        var offset = 0
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                  let hours = number(index + 1..<index + 3), let minutes = number(index + 4..<index + 6), hours < 24, minutes < 60 else { return nil }
            offset = (hours * 3_600 + minutes * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm), so no calendar or time zone is consulted.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Int64(days) * 86_400 + Int64(hour * 3_600 + minute * 60 + second - offset)
    }
}
