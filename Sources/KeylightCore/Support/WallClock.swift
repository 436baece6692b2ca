import Foundation

/// The current wall-clock time, injected wherever Keylight reads it so tests can move it.
public protocol WallClock: Sendable {
    /// The current time.
    var now: Date { get }
}

extension WallClock {
    /// Whole Unix seconds, the unit of every time field in the protocol.
    public var unixSeconds: Int64 { Int64(now.timeIntervalSince1970.rounded(.down)) }

    /// Whole milliseconds since the epoch, the unit of `X-Keylight-Request-Time`.
    public var unixMilliseconds: Int64 { Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// The system's wall clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}
