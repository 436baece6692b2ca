/// How releases are stored and served (issue 51).
public struct ReleaseDeliveryConfiguration: Sendable {
    /// Where artifacts live (`--artifacts-dir`). Nil: a `keylight-artifacts` folder beside the
    /// SQLite database (with PostgreSQL, the working directory; several processes need a path
    /// they all mount).
    public var artifactsDirectory: String?
    /// The largest artifact an upload may send (`--max-artifact-bytes`, default 2 GiB).
    public var maxArtifactBytes: Int64 = 2 << 30
    /// How long a download link works without a lease beside it (`--download-link-seconds`).
    public var downloadLinkSeconds: Int64 = 3_600
    /// With a front proxy (`--accel-redirect-prefix /protected/`): downloads answer with
    /// `X-Accel-Redirect: <prefix><ab>/<sha256>` and the proxy sends the file.
    public var accelRedirectPrefix: String?

    public init() {}
}
