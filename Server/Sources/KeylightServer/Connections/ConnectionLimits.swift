/// How long a client may take and how many connections may be open at once: the defences
/// against slow or numerous peers (slowloris, idle keep-alive hoarding, connection floods).
public struct ConnectionLimits: Sendable {
    /// From a request's first byte to its last: a request still incomplete after this is answered
    /// 408 (headers not yet complete) or closed (body stalled). `--request-timeout`.
    public var requestTimeout: Duration = .seconds(30)
    /// A keep-alive connection with no request in flight is closed after this.
    public var idleTimeout: Duration = .seconds(60)
    /// An artifact upload (the one request without a whole-request deadline) that sends no byte
    /// for this long is closed.
    public var uploadIdleTimeout: Duration = .seconds(30)
    /// Open connections per process; one more is answered 503 and closed at once. `--max-connections`.
    public var maxConnections = 10_000

    public init() {}
}
