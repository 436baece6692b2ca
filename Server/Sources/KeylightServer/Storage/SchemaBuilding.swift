import SQLKit

// The few things Keylight's schema needs that sql-kit's builders do not say, each as small as
// possible so the rest of every migration is written with the builders.

extension SQLDataType {
    /// BOOLEAN on both databases: sql-kit has no boolean type (SQLite keeps 0/1 under it).
    static var boolean: SQLDataType { .custom(SQLRaw("BOOLEAN")) }
}

extension SQLColumnConstraintAlgorithm {
    /// A primary key whose values the server chooses. sql-kit's bare `.primaryKey` asks for
    /// auto-increment, which SQLite refuses on a TEXT column.
    static var key: SQLColumnConstraintAlgorithm { .primaryKey(autoIncrement: false) }
}

extension SQLCreateTableBuilder {
    /// Creates the table stored in primary-key order where the database can (SQLite's
    /// `WITHOUT ROWID`, from ``StorageCapabilities``). sql-kit has no table options, so the
    /// clause is appended to the statement the builder wrote.
    func run(clustered capabilities: StorageCapabilities) async throws {
        try await database.raw(SQLQueryString(database.serialize(createTable).sql + capabilities.clusteredTable)).run()
    }

    /// A 64-bit auto-incrementing primary key. sql-kit's `.primaryKey(autoIncrement: true)`
    /// leaves SQLite's key without `AUTOINCREMENT` (so ids of deleted rows could come back);
    /// ``StorageCapabilities/autoIncrementPrimaryKey`` spells it for each database.
    func autoIncrementKey(_ name: String, _ capabilities: StorageCapabilities) -> Self {
        column(SQLIdentifier(name), type: SQLRaw(capabilities.autoIncrementPrimaryKey), [])
    }
}

extension SQLCreateIndexBuilder {
    /// Creates a partial index (`… WHERE predicate`). sql-kit's index builder has no `WHERE`,
    /// so the predicate, a constant written here, is appended to the statement it wrote.
    func run(where predicate: String) async throws {
        try await database.raw(SQLQueryString(database.serialize(createIndex).sql + " WHERE " + predicate)).run()
    }
}

extension SQLDatabase {
    /// Adds nullable columns to `table`, one statement each: SQLite alters one column at a time.
    func addColumns(to table: String, _ columns: [(name: String, type: SQLDataType)]) async throws {
        for column in columns {
            try await alter(table: table).column(column.name, type: column.type).run()
        }
    }
}
