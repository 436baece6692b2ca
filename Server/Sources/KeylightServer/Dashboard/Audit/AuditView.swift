import Foundation

/// `audit.mustache`.
struct AuditView: Sendable {
    var chrome: Chrome
    var entries: [AuditRow]
    var nextURL: String?
    /// The filters as given.
    var actor: String?
    var action: String?
    var tenant: String?
    var kinds: [AuditKindOption]
}

struct AuditKindOption: Sendable {
    var name: String
    var selected: Bool
}

struct AuditRow: Sendable {
    var at: String
    var actor: String
    /// Where a user's or token's request came from.
    var origin: String?
    /// The log filtered to this actor.
    var actorURL: String
    var action: String
    var tenant: String?
    var target: String?
    var details: String

    init(_ entry: AuditEntry) {
        at = DashboardFormat.time(entry.at)
        actor = entry.actor
        actorURL = "/dashboard/audit?" + FormEncoding.encode([("actor", entry.actor)])
        let origin = [entry.actorAddress, entry.actorUserAgent.map { String($0.prefix(60)) }].compactMap { $0 }.joined(separator: " · ")
        self.origin = origin.isEmpty ? nil : origin
        action = entry.action
        tenant = entry.tenantId
        target = entry.target
        details = Self.readable(entry.details)
    }

    /// `key=value` pairs in key order, for a person reading the log (the JSON as stored when
    /// it is not an object).
    static func readable(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return json }
        return object.keys.sorted().map { "\($0)=\(object[$0].map { "\($0)" } ?? "")" }.joined(separator: " ")
    }
}
