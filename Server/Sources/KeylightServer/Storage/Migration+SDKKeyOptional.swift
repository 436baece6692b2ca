import SQLKit

extension Migration {
    /// Protocol 6.7: a product may serve SDK requests that carry no SDK key (the hosted service's
    /// C++ client never sends one). Required by default, as every product was before.
    static let sdkKeyOptional = Migration(name: "0013_sdk_key_optional") { db, _ in
        try await db.alter(table: "products").column("sdk_key_required", type: .boolean, .notNull, .default(SQLLiteral.boolean(true))).run()
    }
}
