/// Which date of a license a reminder is about: its end (`expires_at`) or the end of its updates
/// (`updates_until`). The raw value is what `license_reminders.kind` stores.
enum ReminderKind: String, CaseIterable, Sendable {
    case expires
    case updates

    var eventType: WebhookEventType {
        switch self {
        case .expires: .licenseExpiringSoon
        case .updates: .licenseUpdatesExpiringSoon
        }
    }

    var mailKind: MailJob.Kind {
        switch self {
        case .expires: .expiryReminder
        case .updates: .updatesReminder
        }
    }

    /// The license column holding the date (a constant, for the sweep's SQL).
    var column: String {
        switch self {
        case .expires: "expires_at"
        case .updates: "updates_until"
        }
    }

    init?(mailKind: MailJob.Kind) {
        guard let kind = Self.allCases.first(where: { $0.mailKind == mailKind }) else { return nil }
        self = kind
    }

    func date(of license: License) -> Int64? {
        switch self {
        case .expires: license.expiresAt
        case .updates: license.updatesUntil
        }
    }
}

/// When a tenant's reminders go out: so many days before a license's date, largest first.
struct ReminderSchedule: Sendable, Hashable {
    /// Distinct, 1-365, largest first.
    let daysBefore: [Int]

    static let defaultDays = [30, 7, 1]
    static let allowedDays = 1...365
    static let maxThresholds = 8

    init(daysBefore: [Int]) {
        self.daysBefore = Array(Set(daysBefore)).sorted(by: >)
    }

    /// The threshold a reminder about `date` is due for at `now`: the nearest one already reached
    /// (the smallest whose moment, `date - days`, has come), so a license found late (minted five
    /// days before its end, or a sweep that did not run for a while) gets one reminder, not every
    /// one it missed. Nil before the first threshold and once the date itself has come.
    func due(date: Int64, now: Int64) -> Int? {
        guard date > now else { return nil }
        return daysBefore.last { date - Int64($0) * 86_400 <= now }
    }

    /// The thresholds a reminder for `threshold` counts as done without sending them: every larger
    /// one (they were reached earlier, and a buyer never gets several reminders at once).
    func passedOver(by threshold: Int) -> [Int] {
        daysBefore.filter { $0 > threshold }
    }

    /// How far ahead of now a date can be and still have a reminder due.
    var window: Int64 { Int64(daysBefore.first ?? 0) * 86_400 }
}

/// The reminder rules the sweep applies to a license as read in the transaction that sends it.
enum ReminderRules {
    /// What to send for `license` now: the threshold, the ones it passes over, and the date. Nil
    /// when nothing is due: a revoked or suspended license, no date (lifetime, or waiting for its
    /// first activation), a date already past, or an updates date of a license that has ended.
    static func due(_ license: License, kind: ReminderKind, schedule: ReminderSchedule, now: Int64) -> (threshold: Int, passedOver: [Int], date: Int64)? {
        guard license.status == .active, let date = kind.date(of: license) else { return nil }
        if kind == .updates, let expiresAt = license.expiresAt, expiresAt <= now { return nil }
        guard let threshold = schedule.due(date: date, now: now) else { return nil }
        return (threshold, schedule.passedOver(by: threshold), date)
    }
}

/// What one reminder leaves behind, decided by the rules on the license as locked in the
/// transaction that sends it: the threshold claimed, the larger ones counted done with it, the
/// event (``ChangeLog/reminderDue(_:kind:daysBefore:date:)``) and, when the buyer is mailed, to whom.
struct ReminderSend: Sendable {
    var threshold: Int
    var passedOver: [Int]
    var date: Int64
    var entry: ChangeLog.Entry
    var mailTo: String?
}
