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
        subcommands: [CreateUserCommand.self, DeleteUserCommand.self, ListUsersCommand.self, SetRoleCommand.self, ResetTwoFactorCommand.self]
    )
}

struct CreateUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-user",
        abstract: "Create a dashboard user (email + password, stored as a bcrypt hash).",
        discussion: """
        The password is read from standard input (one line) when it is not a terminal, so scripts can \
        pipe it in; on a terminal it is asked for twice without echo. At least 12 characters.

        A new user is an owner of every tenant unless --tenant and --role say otherwise (the \
        dashboard's team page invites and changes members of one tenant).
        """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The user's email address (their sign-in name).")
    var email: String

    @Flag(help: "Set a new password if the user exists (their roles stay as they are).")
    var update = false

    @Option(help: "The tenant a new user is a member of (default: every tenant).")
    var tenant: String?

    @Option(help: "A new user's role: owner, admin, developer, support or read_only (default: owner).")
    var role: String = Role.owner.rawValue

    func run() async throws {
        guard let role = Role(rawValue: role) else {
            Standard.error("keylight: error: --role is one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))")
            throw ExitCode(2)
        }
        let password = try Self.readPassword()
        let (tenant, email, update) = (tenant, email, update)
        let user = try await database.withMigrated { db in
            if let tenant, try await db.tenant(id: tenant) == nil {
                throw ValidationError("No tenant \(tenant).")
            }
            return try await PasswordHasher.withHasher { hasher in
                try await DashboardAccounts(database: db, hasher: hasher).createUser(
                    email: email, password: password, replacing: update, membership: (tenant ?? Membership.everyTenant, role)
                )
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

struct SetRoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-role",
        abstract: "Give a dashboard user a role in a tenant, or in every tenant; or take it away with --remove.",
        discussion: "The last owner of a tenant (or of every tenant) keeps their role until another owner is made."
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The user's email address.")
    var email: String

    @Option(help: "The tenant (default: every tenant).")
    var tenant: String?

    @Option(help: "owner, admin, developer, support or read_only.")
    var role: String?

    @Flag(help: "Remove the user's role there instead.")
    var remove = false

    func run() async throws {
        guard remove != (role != nil) else {
            Standard.error("keylight: error: give --role, or --remove")
            throw ExitCode(2)
        }
        let parsed = try role.map { name -> Role in
            guard let role = Role(rawValue: name) else {
                Standard.error("keylight: error: --role is one of \(Role.allCases.map(\.rawValue).joined(separator: ", "))")
                throw ExitCode(2)
            }
            return role
        }
        let (email, tenant) = (email, tenant)
        try await database.withMigrated { db in
            if let tenant, try await db.tenant(id: tenant) == nil { throw ValidationError("No tenant \(tenant).") }
            try await PasswordHasher.withHasher { hasher in
                try await DashboardAccounts(database: db, hasher: hasher).setRole(email: email, tenantId: tenant, role: parsed, actor: AuditActor("cli"))
            }
        }
        Standard.line("\(email.lowercased()): \(parsed?.rawValue ?? "no role") in \(tenant ?? "every tenant")")
    }
}

struct ResetTwoFactorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-2fa",
        abstract: "Turn a dashboard user's second factor off (a lost authenticator) and end their sessions.",
        discussion: "Run on the server's machine. The user signs in with their password and sets up a new second factor."
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The user's email address.")
    var email: String

    func run() async throws {
        let email = email
        try await database.withMigrated { db in
            try await PasswordHasher.withHasher { hasher in
                try await DashboardAccounts(database: db, hasher: hasher).resetTwoFactor(email: email, actor: AuditActor("cli"))
            }
        }
        Standard.line("second factor reset for \(email.lowercased()); their sessions have ended")
    }
}

struct ListUsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list-users", abstract: "List dashboard users.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let users = try await database.withMigrated { db in
            var users: [(DashboardUser, [Membership])] = []
            for user in try await db.dashboardUsers() { users.append((user, try await db.memberships(userId: user.id))) }
            return users
        }
        for (user, memberships) in users {
            let roles = memberships.map { "\($0.role)@\($0.tenantId == Membership.everyTenant ? "every-tenant" : $0.tenantId)" }.joined(separator: ",")
            Standard.line("\(user.email)\t\(roles.isEmpty ? "no-role" : roles)\t2fa \(user.hasTwoFactor ? "on" : "off")\tcreated \(user.createdAt)\(user.lastLoginAt.map { "\tlast sign-in \($0)" } ?? "")")
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
