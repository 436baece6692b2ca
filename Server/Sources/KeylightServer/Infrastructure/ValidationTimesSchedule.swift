/// When the write-behind flush writes the validation times ("last seen") it buffered.
///
/// A validation time is a write to its instance's row, so its cost is the page the row is on.
/// Devices validate in no order: on a server with a million of them nearly every time written
/// once a second lands on a page of its own, and each costs a page written to the WAL (and later
/// checkpointed). Gathered for ``gathering``, the times of a busy server share pages: written in
/// id order, each page of `instances` is written once per gathering, not once per device (on
/// SQLite, whose table is kept in id order; PostgreSQL's heap is not, and gains less). A quiet
/// server gains nothing from gathering (its few times per second are on as many pages either
/// way), so up to ``eagerAtMost`` waiting times are written at every flush, as before.
public struct ValidationTimesSchedule: Sendable, Equatable {
    /// Written at the next flush when no more than this many are waiting.
    public var eagerAtMost: Int
    /// How long a busy server's times wait, at most, from the flush that first held them back.
    public var gathering: Duration
    /// Written at the next flush when this many are waiting, whatever their age: an instance id
    /// and its time take about 100 bytes, so the default keeps the buffer to about 25 MB, plus
    /// what arrives while a flush runs (checked once a flush), plus the batch being written.
    public var maxPending: Int

    public init(eagerAtMost: Int = 256, gathering: Duration = .seconds(30), maxPending: Int = 250_000) {
        self.eagerAtMost = eagerAtMost
        self.gathering = gathering
        self.maxPending = maxPending
    }

    /// Every waiting time at every flush (no gathering).
    public static let everyFlush = ValidationTimesSchedule(eagerAtMost: .max, gathering: .zero, maxPending: 1)

    /// As `--last-seen-gathering` says: gathered for `seconds`, or ``everyFlush`` for 0.
    public static func gathering(seconds: Int) -> ValidationTimesSchedule {
        seconds == 0 ? .everyFlush : ValidationTimesSchedule(gathering: .seconds(seconds))
    }

    /// Whether `pending` times, held back since `waited` ago, are written now.
    func isDue(pending: Int, waited: Duration) -> Bool {
        pending > 0 && (pending <= eagerAtMost || pending >= maxPending || waited >= gathering)
    }
}
