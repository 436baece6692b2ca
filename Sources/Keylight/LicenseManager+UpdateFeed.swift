import Foundation
import KeylightCore

extension LicenseManager {
    /// How long ``updateFeedHTTPHeaders()`` waits for a renewal: `URLSessionTransport`'s own request
    /// timeout, so it never waits longer than the default transport would for the answer.
    static let updateFeedRefreshTimeout: Double = 20

    /// The HTTP headers that authorize this device to read the update feed your server serves
    /// (`{server}/{tenant}/{product}/appcast.xml`) and download the builds it lists. Give them
    /// to Sparkle as `SPUUpdater.httpHeaders`.
    ///
    /// With a lease, the answer is `X-Keylight-Lease`: the lease's JSON in unpadded base64url. The
    /// server accepts it while it verifies against the tenant's keys, belongs to this product and
    /// has not ended. Without a lease (a trial, the free tier, an app never activated), the answer
    /// is empty, and the server's public-feed setting decides.
    ///
    /// A lease that ends within ``RefreshPolicy/leaseExpiryWindow`` (a day by default), or has
    /// ended, is renewed first, through the same validation as ``refreshIfNeeded(force:)``, so an
    /// app left closed for a week still gets its updates once it is online. The renewal is not
    /// tried more often than the refresh policy allows. It is awaited for at most 20 seconds; after
    /// that, or when the server cannot be reached, the current lease is sent, and a renewal still
    /// under way is kept when it arrives.
    ///
    /// Sparkle reads `httpHeaders` when a check starts, without waiting, so set them ahead of
    /// each check: see <doc:UpdatesWithSparkle>.
    public func updateFeedHTTPHeaders() async -> [String: String] {
        await updateFeedHTTPHeaders(refreshTimeout: Self.updateFeedRefreshTimeout)
    }

    /// ``updateFeedHTTPHeaders()`` with the renewal's bound given (tests shorten it).
    func updateFeedHTTPHeaders(refreshTimeout: Double) async -> [String: String] {
        // A store not read yet, or locked, holds no lease this manager may vouch for.
        guard await ensureLoaded() else { return [:] }
        if updateFeedLeaseNeedsRefresh {
            // The renewal runs in a task of its own: a deadline that passes stops the wait, not
            // the renewal, whose lease the next call then sends.
            let renewal = Task { await self.renewLeaseForUpdateFeed() }
            _ = await withDeadline(seconds: refreshTimeout) { await renewal.value }
        }
        // The lease kept now: the renewed one, or, when the renewal failed or is still under way,
        // the one there was.
        return UpdateFeedAuthorization.headers(for: stored.lease, now: configuration.clock.unixSeconds)
    }

    private var updateFeedLeaseNeedsRefresh: Bool {
        UpdateFeedAuthorization.needsRefresh(
            stored.lease, isActivated: stored.licenseKey != nil && stored.instanceId != nil && stored.rejection == nil,
            now: configuration.clock.unixSeconds, window: configuration.refreshPolicy.leaseExpiryWindow
        )
    }

    private func renewLeaseForUpdateFeed() async {
        // The launch's own refresh may still be under way (an updater checks at launch too):
        // its answer is awaited rather than asked for a second time.
        await pendingRefresh?.value
        guard updateFeedLeaseNeedsRefresh else { return }
        // Not forced: the policy's debounce keeps an updater that asks often, while the server is
        // down, from sending a validation each time.
        await refreshIfNeeded()
    }
}

/// How a device proves to the update feed that it holds a license: its lease, in one header.
/// Free of the manager's state, so the rules are tested on their own.
enum UpdateFeedAuthorization {
    /// The header the server reads the lease from.
    static let headerName = "X-Keylight-Lease"

    /// Whether `lease` should be renewed before it is sent: it ends within `window` seconds of
    /// `now`, or has ended, and the license is activated (so the validate path can renew it).
    /// A lease that ends sooner than the window could lapse between Sparkle's check and the
    /// download it leads to, or before the next check.
    static func needsRefresh(_ lease: Lease?, isActivated: Bool, now: Int64, window: Int64) -> Bool {
        guard isActivated, let lease else { return false }
        // Compared without overflow: no stored date or configured window can trap the app.
        let (remaining, overflow) = lease.expiresAt.subtractingReportingOverflow(now)
        return overflow ? lease.expiresAt < now : remaining < window
    }

    /// The headers that carry `lease`: none without one, and none for a lease the server would
    /// refuse as ended (past `expiresAt` and the 300 s of skew it allows): without a header a
    /// product with a public feed still serves it, where an ended lease would be a 401. The
    /// lease travels as the JSON the SDK stores and the server verifies (`Lease.json()`, keys
    /// sorted), in unpadded base64url so it needs no escaping in a header.
    static func headers(for lease: Lease?, now: Int64) -> [String: String] {
        guard let lease else { return [:] }
        let (limit, overflow) = lease.expiresAt.addingReportingOverflow(Lease.expirySkew)
        guard overflow || now <= limit else { return [:] }
        return [headerName: Base64.encodeURLSafe(lease.json())]
    }
}
