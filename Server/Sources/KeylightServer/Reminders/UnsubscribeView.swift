/// What the reminder opt-out page shows: the license by its masked key, and either the button that
/// turns its reminder mails off (a GET never does: mail scanners follow links), what was done, or
/// why the link does not work. Stored properties only: the template reads them by reflection.
struct UnsubscribeView: Sendable {
    var title = "Reminder mails"
    var productName = "Keylight"
    var maskedKey: String?
    /// The form's target: this link again (its token in the query).
    var action: String?
    var notice: String?
    var problem: String?
    /// Reminder mails are on: the page offers the button.
    var offer = false

    /// The page for a license whose link was opened (`done`: its reminder mails are off).
    init(_ recipient: ReminderRecipient, token: String, done: Bool) {
        productName = recipient.productName
        maskedKey = recipient.license.maskedKey
        if done {
            notice = "You will get no more reminder mails about this license. Mails about your purchase itself still come."
        } else {
            offer = true
            action = "/reminders/unsubscribe?token=" + token
        }
    }

    /// The page for a link that does not work.
    init(problem: String) {
        title = "Link not valid"
        self.problem = problem
    }
}
