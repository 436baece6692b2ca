import SQLKit

extension Migration {
    /// Mail to buyers:
    /// - each license keeps its key sealed under the master key (AES-GCM, bound to the license id),
    ///   so it can be mailed again; the hash stays the lookup, and licenses minted before this keep
    ///   none (their key cannot be recovered, only reminted);
    /// - an outbox of mails to send, written in the transaction that mints the license. A row names
    ///   the license (or, for a lost-key mail, the address) and never holds the key or the body:
    ///   the mail is rendered when it is sent, and nothing of it is kept afterwards;
    /// - each tenant's mail: sender name, reply-to, and the subject and bodies as templates.
    static let mail = Migration(name: "0011_mail") { db, capabilities in
        try await db.addColumns(to: "licenses", [("sealed_key", .text)])
        try await db.create(table: "mail_outbox")
            .column("id", type: .text, .key)
            .column("tenant_id", type: .text, .notNull, .references("tenants", "id"))
            .column("kind", type: .text, .notNull)
            .column("license_id", type: .text)
            .column("to_address", type: .text, .notNull)
            .column("status", type: .text, .notNull)
            .column("attempts", type: .int, .notNull)
            .column("next_attempt_at", type: .bigint, .notNull)
            .column("locked_until", type: .bigint, .notNull)
            .column("last_error", type: .text)
            .column("created_at", type: .bigint, .notNull)
            .column("finished_at", type: .bigint)
            .run()
        try await db.create(index: "mail_outbox_due").on("mail_outbox").column("status").column("next_attempt_at").run()
        try await db.create(index: "mail_outbox_by_license").on("mail_outbox").column("license_id").column("created_at").run()
        try await db.create(table: "mail_settings")
            .column("tenant_id", type: .text, .key, .references("tenants", "id"))
            .column("sender_name", type: .text)
            .column("reply_to", type: .text)
            .column("subject_template", type: .text)
            .column("text_template", type: .text)
            .column("html_template", type: .text)
            .column("updated_at", type: .bigint, .notNull)
            .run()
    }
}
