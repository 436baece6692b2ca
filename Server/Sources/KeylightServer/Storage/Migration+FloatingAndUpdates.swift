import SQLKit

extension Migration {
    /// Floating seats and "updates until" licenses:
    /// - key types say whether their seats float (held only while the device keeps validating),
    ///   how long a silent device keeps its seat, and how far past the limit they may go
    ///   (whole percent, so the cap stays integer arithmetic in the activation's UPDATE);
    /// - key types may bound updates, and each license keeps the date its purchase covers
    ///   (fixed at minting: a later change of the key type never changes what a customer bought);
    /// - each floating seat keeps its deadline, indexed only where set, which is what the sweep reads.
    static let floatingAndUpdates = Migration(name: "0010_floating_updates") { db, _ in
        try await db.alter(table: "key_types").column("floating", type: .boolean, .notNull, .default(SQLLiteral.boolean(false))).run()
        try await db.alter(table: "key_types").column("heartbeat_seconds", type: .int, .notNull, .default(600)).run()
        try await db.alter(table: "key_types").column("overage_percent", type: .int, .notNull, .default(0)).run()
        try await db.addColumns(to: "key_types", [("updates_days", .int)])
        try await db.addColumns(to: "licenses", [("updates_until", .bigint)])
        try await db.addColumns(to: "instances", [("seat_expires_at", .bigint)])
        try await db.create(index: "instances_seat_deadline").on("instances").column("seat_expires_at").run(where: "seat_expires_at IS NOT NULL")
    }
}
