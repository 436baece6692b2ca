import SQLKit

extension Migration {
    /// Offline activation and the customer portal (protocol 6.3-6.5): the device key an offline
    /// instance was activated with (its deactivation proofs must be signed by it), each key
    /// type's offline lease lifetime, and whether a product's customer portal is open.
    static let seatsAndOffline = Migration(name: "0009_seats_offline") { db, _ in
        try await db.addColumns(to: "instances", [("device_key", .text)])
        // NOT NULL with a default: existing rows take the default, and no reader sees a NULL.
        try await db.alter(table: "key_types").column("offline_lease_days", type: .int, .notNull, .default(365)).run()
        try await db.alter(table: "products").column("portal_enabled", type: .boolean, .notNull, .default(SQLLiteral.boolean(true))).run()
    }
}
