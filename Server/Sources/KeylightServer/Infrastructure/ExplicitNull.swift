/// Encodes `nil` as `null` instead of leaving the key out, for fields whose absence and
/// nullness mean different things to clients (`expires_at: null` is a lifetime license).
@propertyWrapper
struct ExplicitNull<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
