import SQLKit

extension Database {
    func setting(_ name: String) async throws -> String? {
        try await sql.raw("SELECT value FROM settings WHERE name = \(bind: name)").first(decodingColumn: "value", as: String.self)
    }

    /// Stores `value` unless the setting exists; returns the stored value either way, so several
    /// processes starting together agree on one.
    func settingCreatingIfAbsent(_ name: String, value: String) async throws -> (value: String, created: Bool) {
        try await write { db in
            let inserted = try await db.raw("""
                INSERT INTO settings (name, value) VALUES (\(bind: name), \(bind: value)) ON CONFLICT DO NOTHING RETURNING value
                """).first()
            if inserted != nil { return (value, true) }
            guard let existing = try await db.raw("SELECT value FROM settings WHERE name = \(bind: name)")
                .first(decodingColumn: "value", as: String.self) else { throw StorageError.corrupt("setting \(name)") }
            return (existing, false)
        }
    }
}
