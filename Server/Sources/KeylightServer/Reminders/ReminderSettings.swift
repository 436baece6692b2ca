/// A tenant's reminders: when they go out, and whether buyers are mailed besides the developer's
/// webhooks. A tenant that never set them has the defaults: 30, 7 and 1 days, no mails.
struct ReminderSettings: Sendable, Hashable {
    var schedule = ReminderSchedule(daysBefore: ReminderSchedule.defaultDays)
    /// Mail buyers too (off by default: the developer may remind them another way).
    var mailBuyers = false
    /// The tenant's own wording (Mustache, as the license mail's); nil: the server's.
    var subjectTemplate: String?
    var textTemplate: String?
    var htmlTemplate: String?

    /// The stored `days_before` (`30,7,1`), largest first.
    var storedDays: String { schedule.daysBefore.map(String.init).joined(separator: ",") }

    init(schedule: ReminderSchedule = ReminderSchedule(daysBefore: ReminderSchedule.defaultDays), mailBuyers: Bool = false) {
        self.schedule = schedule
        self.mailBuyers = mailBuyers
    }

    /// The settings as stored; a value this build cannot read falls back to the default days.
    init(storedDays: String, mailBuyers: Bool) {
        let days = storedDays.split(separator: ",").compactMap { Int($0) }.filter { ReminderSchedule.allowedDays.contains($0) }
        self.init(schedule: ReminderSchedule(daysBefore: days.isEmpty ? ReminderSchedule.defaultDays : days), mailBuyers: mailBuyers)
    }
}

/// `PUT /admin/v1/tenants/{t}/reminders`. PUT replaces: an absent (or null) field is the default.
struct ReminderSettingsRequest: Decodable, Sendable {
    /// 1-8 distinct whole days, each 1-365.
    var days_before: [Int]?
    var mail_buyers: Bool?
    /// The tenant's own wording; absent, null or blank: the server's (`defaults` in the answer).
    var subject_template: String?
    var text_template: String?
    var html_template: String?

    /// The body checked; every field before anything is stored.
    func settings() throws(APIError) -> ReminderSettings {
        var settings = ReminderSettings()
        if let days = days_before {
            guard (1...ReminderSchedule.maxThresholds).contains(days.count) else {
                throw .invalidRequest("Field days_before must list 1-\(ReminderSchedule.maxThresholds) numbers of days.")
            }
            guard days.allSatisfy(ReminderSchedule.allowedDays.contains) else {
                throw .invalidRequest("Field days_before: each must be a whole number of days from 1 to 365.")
            }
            guard Set(days).count == days.count else { throw .invalidRequest("Field days_before lists a number of days twice.") }
            settings.schedule = ReminderSchedule(daysBefore: days)
        }
        settings.mailBuyers = mail_buyers ?? false
        func blankIsNil(_ value: String?) -> String? { value.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 } }
        if let subject = blankIsNil(subject_template) {
            guard !MailAddress.hasLineBreakOrControl(subject) else { throw .invalidRequest("Field subject_template contains a line break or control character.") }
            guard subject.unicodeScalars.count <= AdminService.maxSubjectTemplateLength else {
                throw .invalidRequest("Field subject_template is longer than \(AdminService.maxSubjectTemplateLength) characters.")
            }
            settings.subjectTemplate = try AdminService.template(subject, "subject_template", html: false)
        }
        if let text = blankIsNil(text_template) { settings.textTemplate = try AdminService.template(text, "text_template", html: false) }
        if let html = blankIsNil(html_template) { settings.htmlTemplate = try AdminService.template(html, "html_template", html: true) }
        return settings
    }
}

/// A tenant's reminder settings as the API shows them (days largest first).
struct ReminderSettingsBody: Encodable {
    var days_before: [Int]
    var mail_buyers: Bool
    @ExplicitNull var subject_template: String?
    @ExplicitNull var text_template: String?
    @ExplicitNull var html_template: String?
    /// The server's wording, for an editor to start from, and the variables a template may use.
    var defaults = Defaults()
    var variables = Dictionary(uniqueKeysWithValues: MailTemplates.reminderVariables.map { ($0.name, $0.meaning) })

    struct Defaults: Encodable {
        var subject_template = MailTemplates.reminderSubject
        var text_template = MailTemplates.reminderText
        var html_template = MailTemplates.reminderHTML
    }

    init(_ settings: ReminderSettings) {
        days_before = settings.schedule.daysBefore
        mail_buyers = settings.mailBuyers
        subject_template = settings.subjectTemplate
        text_template = settings.textTemplate
        html_template = settings.htmlTemplate
    }
}
