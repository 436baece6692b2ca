/// The trial alone, whatever the license (``LicenseManager/checkTrialStatus()``).
public enum TrialStatus: Hashable, Sendable {
    /// The app has not been launched with this SDK yet (``LicenseManager/checkOnLaunch()`` starts it).
    case notStarted
    /// The trial runs, with this many days left (at least 1).
    case active(daysLeft: Int)
    /// The trial is over.
    case expired
}

/// What an install without a license reports in its keyless beacon (``LicenseManager/reportKeylessState(_:)``).
public enum KeylessReportState: String, Hashable, Sendable, CaseIterable {
    case trial
    case freeTier = "free_tier"
    case expired
}
