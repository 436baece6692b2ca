import Foundation

/// `audit.mustache`.
struct AuditView: Sendable {
    var chrome: Chrome
    var entries: [AuditRow]
    var nextURL: String?
}

struct AuditRow: Sendable {
    var at: String
    var actor: String
    var action: String
    var tenant: String?
    var target: String?
    var details: String

    init(_ entry: AuditEntry) {
        at = DashboardFormat.time(entry.at)
        actor = entry.actor
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
