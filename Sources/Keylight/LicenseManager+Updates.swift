import Foundation
import KeylightCore

extension LicenseManager {
    /// The newest build release date the license's updates cover, read from its signed lease
    /// (an "updates until" license); nil when the license has no such bound, or there is no license.
    /// Builds released later run in the `.limited` state (see ``Configuration/appReleaseDate``).
    public var updatesEntitledUntil: Date? {
        guard stored.licenseKey != nil, let lease = stored.lease, let until = UpdatesEntitlement.date(in: lease.entitlements) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(until))
    }

    /// Whether a build released at `date` would run licensed under this license: for an update
    /// check, such as Sparkle's `SPUUpdaterDelegate`, with the appcast item's `date`.
    public func coversUpdate(releasedAt date: Date?) -> Bool {
        UpdateCoverage.covers(releasedAt: date, until: updatesEntitledUntil)
    }

    /// The first of `items` whose build this license covers. Pass them newest first by version:
    /// Sparkle's `SUAppcast.items` keep the feed's order, so sort them first (see <doc:UpdatesWithSparkle>).
    public func newestCoveredUpdate<Item>(in items: [Item], releaseDate: (Item) -> Date?) -> Item? {
        UpdateCoverage.newestCovered(items, until: updatesEntitledUntil, releaseDate: releaseDate)
    }
}

/// Which updates an "updates until" license covers, without depending on any updater framework.
/// With Sparkle, whose appcast keeps the feed's order, sort the items by version first:
///
/// ```swift
/// func bestValidUpdate(in appcast: SUAppcast, for updater: SPUUpdater) -> SUAppcastItem? {
///     let comparator = SUStandardVersionComparator.default
///     let newestFirst = appcast.items.sorted {
///         comparator.compareVersion($0.versionString, toVersion: $1.versionString) == .orderedDescending
///     }
///     return manager.newestCoveredUpdate(in: newestFirst) { $0.date } ?? SUAppcastItem.empty()
/// }
/// ```
public enum UpdateCoverage {
    /// A build released at `date` is covered when there is no bound, or it was released by `until`.
    /// A build of unknown date is not covered when there is a bound: installing it could turn a
    /// licensed app into a limited one.
    public static func covers(releasedAt date: Date?, until: Date?) -> Bool {
        guard let until else { return true }
        guard let date else { return false }
        return date <= until
    }

    /// The first of `items` whose release is covered.
    public static func newestCovered<Item>(_ items: [Item], until: Date?, releaseDate: (Item) -> Date?) -> Item? {
        items.first { covers(releasedAt: releaseDate($0), until: until) }
    }
}
