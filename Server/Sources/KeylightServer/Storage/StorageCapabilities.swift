import SQLKit

/// What differs between the databases Keylight runs on, derived from sql-kit's dialect rather
/// than from the database's name. This is the one place such differences live.
struct StorageCapabilities: Sendable {
    /// Locks the rows a `SELECT` reads until the transaction ends (`FOR UPDATE`), or nil where
    /// the database has no row locks and a write transaction takes the whole-database write lock
    /// when it begins instead.
    let rowLockClause: String?
    /// How a write transaction begins: `BEGIN IMMEDIATE` takes SQLite's write lock up front, so
    /// two writers never both read and then fail to upgrade.
    let beginWrite: String
    /// Without row locks, writers in one process queue in memory rather than in the database's
    /// busy handler, which would park a thread of the small blocking pool per waiter.
    let serializesWritersInProcess: Bool
    /// Column definition of an auto-incrementing 64-bit primary key.
    let autoIncrementPrimaryKey: String
    let bigint: String
    let blob: String
    /// Appended to `CREATE TABLE` for tables stored in primary-key order (SQLite's
    /// `WITHOUT ROWID`), so a lookup by primary key is one B-tree descent, not two.
    let clusteredTable: String
    /// Statements that tidy up after a bulk write (statistics, write-ahead log).
    let afterBulkWrite: [String]
    let migrationLock: String?
    /// A consistent copy into a file while writers go on (SQLite's `VACUUM INTO`); elsewhere
    /// backups are the database server's own tools' job (pg_dump).
    let backsUpIntoFile: Bool
    /// `WITH … AS (UPDATE … RETURNING …) INSERT …`: writes to two tables in one statement, so a
    /// transaction on a database across the network takes one round trip for them, not two
    /// (PostgreSQL). SQLite's `WITH` takes only a `SELECT`.
    let writesThroughCTEs: Bool
    /// Lists the tables of the schema in use, one `name` column (for reads that must not create
    /// what they look at, such as `keylight migrate --dry-run`).
    let listTables: String

    init(database: any SQLDatabase, driver: DriverTraits) {
        clusteredTable = driver.clusteredTable
        backsUpIntoFile = driver.backsUpIntoFile
        writesThroughCTEs = driver.writesThroughCTEs
        afterBulkWrite = driver.afterBulkWrite
        migrationLock = driver.migrationLock
        listTables = driver.listTables
        let dialect = database.dialect
        let lock = dialect.exclusiveSelectLockExpression.map { database.serialize($0).sql }
        rowLockClause = lock
        beginWrite = lock == nil ? "BEGIN IMMEDIATE" : "BEGIN"
        serializesWritersInProcess = lock == nil
        let clause = database.serialize(dialect.autoIncrementClause).sql
        bigint = database.serialize(SQLDataType.bigint).sql
        blob = database.serialize(SQLDataType.blob).sql
        // SQLite only auto-increments an `INTEGER PRIMARY KEY` (the rowid); others take a clause on any integer.
        autoIncrementPrimaryKey = dialect.supportsAutoIncrement
            ? "\(bigint) \(clause) PRIMARY KEY"
            : "INTEGER PRIMARY KEY \(clause)"
    }
}

/// What the driver knows that sql-kit's dialect does not say.
struct DriverTraits: Sendable {
    var clusteredTable = ""
    var afterBulkWrite = ["ANALYZE"]
    /// Taken first in the migration transaction so processes starting together migrate one at
    /// a time (SQLite's `BEGIN IMMEDIATE` already serialises them).
    var migrationLock: String?
    var backsUpIntoFile = false
    var writesThroughCTEs = false
    var listTables: String

    static let sqlite = DriverTraits(
        clusteredTable: " WITHOUT ROWID",
        // Fresh planner statistics, and the write-ahead log folded back into the database file.
        afterBulkWrite: ["ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"],
        backsUpIntoFile: true,
        listTables: "SELECT name FROM sqlite_master WHERE type = 'table'"
    )

    static let postgres = DriverTraits(
        afterBulkWrite: ["ANALYZE"],
        // Per schema: processes sharing a database and schema migrate one at a time, while
        // installations in other schemas of the same database (and the test suite's many
        // schemas) do not queue behind each other.
        migrationLock: "SELECT pg_advisory_xact_lock(73011984, hashtext(current_schema()))",
        writesThroughCTEs: true,
        listTables: "SELECT CAST(tablename AS TEXT) AS name FROM pg_tables WHERE schemaname = current_schema()"
    )
}
