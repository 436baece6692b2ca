import ArgumentParser
import Foundation
import KeylightServer
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Administer the server's database directly (dashboard accounts).",
        subcommands: [CreateUserCommand.self, DeleteUserCommand.self, ListUsersCommand.self]
    )
}

struct CreateUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-user",
        abstract: "Create a dashboard user (email + password, stored as a bcrypt hash).",
        discussion: """
        The password is read from standard input (one line) when it is not a terminal, so scripts can \
        pipe it in; on a terminal it is asked for twice without echo. At least 12 characters.
        """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The user's email address (their sign-in name).")
    var email: String

    @Flag(help: "Set a new password if the user exists (also unlocks the account).")
    var update = false

    func run() async throws {
        let password = try Self.readPassword()
        let user = try await database.withMigrated { db in
            try await PasswordHasher.withHasher { hasher in
                try await DashboardAccounts(database: db, hasher: hasher).createUser(email: email, password: password, replacing: update)
            }
        }
        Standard.line(update ? "password set for \(user.email)" : "created dashboard user \(user.email)")
    }

    static func readPassword() throws -> String {
        if isatty(STDIN_FILENO) == 0 {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                Standard.error("keylight: error: no password on standard input")
                throw ExitCode(2)
            }
            return line
        }
        let first = prompt("Password: ")
        guard first == prompt("Again: ") else {
            Standard.error("keylight: error: the passwords differ")
            throw ExitCode(2)
        }
        return first
    }

    /// Reads a line from the terminal with echo off.
    private static func prompt(_ text: String) -> String {
        FileHandle.standardError.write(Data(text.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true) ?? ""
    }
}

struct DeleteUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-user",
        abstract: "Delete a dashboard user; their signed-in sessions end at once."
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The user's email address.")
    var email: String

    func run() async throws {
        try await database.withMigrated { db in
            try await PasswordHasher.withHasher { hasher in
                try await DashboardAccounts(database: db, hasher: hasher).deleteUser(email: email)
            }
        }
        Standard.line("deleted dashboard user \(email.lowercased())")
    }
}

struct ListUsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list-users", abstract: "List dashboard users.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        for user in try await database.withMigrated({ try await $0.dashboardUsers() }) {
            Standard.line("\(user.email)\tcreated \(user.createdAt)\(user.lastLoginAt.map { "\tlast sign-in \($0)" } ?? "")\(user.lockedUntil > 0 ? "\tlocked until \(user.lockedUntil)" : "")")
        }
    }
}

extension DatabaseOptions {
    /// Opens the database, brings its schema up to date, runs `body`, and closes it; failures
    /// are reported as input errors (exit 2).
    func withMigrated<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        var logger = Logger(label: "keylight")
        logger.logLevel = .warning
        return try await reportingInputFailuresAsync {
            let db = try await open(poolSize: 1, logger: logger)
            do {
                try await db.migrate(logger: logger)
                let result = try await body(db)
                await db.close()
                return result
            } catch {
                await db.close()
                throw error
            }
        }
    }
}
