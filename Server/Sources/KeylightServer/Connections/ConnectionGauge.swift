import NIOConcurrencyHelpers

/// Counts the open connections of one server so the accept path can refuse past the limit.
///
/// A lock rather than an atomic: it is taken twice per connection (open and close), never per
/// request, and swift-atomics is not otherwise a dependency.
final class ConnectionGauge: Sendable {
    let limit: Int
    private let open = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection; false when it is one over the limit (it is not counted then).
    func admit() -> Bool {
        open.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() {
        open.withLockedValue { $0 -= 1 }
    }
}
