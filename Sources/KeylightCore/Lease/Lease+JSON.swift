import Foundation

extension Lease {
    /// Parses the lease JSON object.
    public init(json data: Data) throws(LeaseError) {
        do {
            self = try JSONDecoder().decode(Lease.self, from: data)
        } catch {
            throw .malformed
        }
    }

    /// The lease JSON object, keys sorted so the output is stable.
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A lease is strings, integers and an array of strings: encoding cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }
}
