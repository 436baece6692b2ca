import Foundation
import NIOConcurrencyHelpers

/// Decoding that refuses what a type does not read. A misspelled field (`customer_emial`) in an
/// admin body or a dashboard form is a client's mistake that would otherwise vanish in silence.
///
/// One mechanism for every body type, and no list of fields to keep in step: the value is
/// decoded through ``RecordingDecoder``, which hands every request on to the real decoder
/// (JSONDecoder, URLEncodedFormDecoder) and notes, for each object, the keys it holds and the
/// keys the type asked about (`decode`, `decodeIfPresent`, `contains`, or `allKeys` for a
/// dictionary). A key held but never asked about is unknown.
enum StrictDecoding {
    /// The first unknown field of a decoded value, as a dotted path (`webhook.urll`).
    struct UnknownField: Error, Equatable {
        let path: String
    }

    /// JSON, strictly: what `decodeBody` answers for malformed JSON, plus 400 `UNKNOWN_FIELD`.
    static func json<T: Decodable>(_ type: T.Type, from bytes: some DataProtocol) throws(APIError) -> T {
        do {
            return try JSONDecoder().decode(Strict<T>.self, from: Data(bytes)).value
        } catch let error as UnknownField {
            throw .unknownField(error.path)
        } catch {
            throw APIError.decoding(error)
        }
    }

    /// Lets JSONDecoder hand over its `Decoder`, which it does not expose otherwise.
    private struct Strict<Value: Decodable>: Decodable {
        let value: Value
        init(from decoder: any Decoder) throws {
            value = try StrictDecoding.decode(Value.self, from: decoder)
        }
    }

    /// The top-level fields `T` reads, found by decoding an empty object through the recorder (a
    /// type reads each optional field's key even when it is absent); nil if `{}` is not a `T`.
    static func fieldNames<T: Decodable>(of type: T.Type) -> [String]? {
        try? JSONDecoder().decode(FieldProbe<T>.self, from: Data("{}".utf8)).fields
    }

    private struct FieldProbe<Value: Decodable>: Decodable {
        let fields: [String]
        init(from decoder: any Decoder) throws {
            let recorder = KeyRecorder()
            _ = try KeyRecorder.$current.withValue(recorder) { try Value(from: RecordingDecoder(base: decoder, recorder: recorder)) }
            fields = recorder.readKeys(at: "").sorted()
        }
    }

    /// Decodes `T` from `decoder` and checks that every field was read; `allowed` names top-level
    /// fields read elsewhere (a form's `_csrf`).
    static func decode<T: Decodable>(_ type: T.Type, from decoder: any Decoder, allowed: Set<String> = []) throws -> T {
        let recorder = KeyRecorder()
        let value = try KeyRecorder.$current.withValue(recorder) { try T(from: RecordingDecoder(base: decoder, recorder: recorder)) }
        if let unknown = recorder.firstUnknown(allowed: allowed) { throw UnknownField(path: unknown) }
        return value
    }
}

/// What ``RecordingDecoder`` noted, per object path: the keys held and the keys asked about.
/// (Locked, so it can be a task-local; one decode runs on one task.)
final class KeyRecorder: Sendable {
    /// The recorder of the decode running on this task: a nested value is decoded by the real
    /// decoder's own machinery (``Nested``), which cannot be handed the recorder otherwise.
    @TaskLocal static var current: KeyRecorder?

    private struct State {
        var present: [String: Set<String>] = [:]
        var read: [String: Set<String>] = [:]
    }
    private let state = NIOLockedValueBox(State())

    func holds(_ keys: [String], at path: String) {
        state.withLockedValue { $0.present[path, default: []].formUnion(keys) }
    }

    func reads(_ key: String, at path: String) {
        state.withLockedValue { _ = $0.read[path, default: []].insert(key) }
    }

    func readKeys(at path: String) -> Set<String> {
        state.withLockedValue { $0.read[path, default: []] }
    }

    /// The unknown field that sorts first (so the answer is the same every time).
    func firstUnknown(allowed: Set<String>) -> String? {
        state.withLockedValue { state in
            var unknown: [String] = []
            for (path, keys) in state.present {
                let known = state.read[path, default: []].union(path.isEmpty ? allowed : [])
                for key in keys.subtracting(known) { unknown.append(path.isEmpty ? key : path + "." + key) }
            }
            return unknown.min()
        }
    }
}
