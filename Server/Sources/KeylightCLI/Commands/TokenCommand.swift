import ArgumentParser
import Foundation
import KeylightCore
import KeylightServer

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "The admin API's owner token.",
        subcommands: [RotateTokenCommand.self]
    )
}

struct RotateTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Make a new owner token; the old one stops working at once, on every server process.",
        discussion: """
        Run it on the server's machine (it writes to the database directly). The new token is printed \
        once, or written to --admin-token-file (0600) and not printed. A server started with \
        KEYLIGHT_ADMIN_TOKEN stores that token again when it starts: rotate by changing the variable there.
        """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Write the new token to this file (0600, replacing it) instead of printing it.")
    var adminTokenFile: String?

    func run() async throws {
        let token = AdminToken.generate()
        let now = Int64(Date().timeIntervalSince1970)
        _ = try await database.withMigrated { db in
            try await db.replaceAdminToken(with: token, now: now, actor: AuditActor("cli"))
        }
        try AdminTokenOutput.deliver(token, file: adminTokenFile, what: "New admin API token")
        Standard.line("The previous token no longer works.")
    }
}

/// Where a new owner token goes: a file (0600) when one is named, so it never reaches a terminal's
/// scrollback or a service's journal, else standard output, once.
enum AdminTokenOutput {
    static func deliver(_ token: String, file: String?, what: String) throws {
        guard let file else {
            Standard.line("\(what) (shown once; store it now): \(token)")
            return
        }
        do {
            try SecretFile.write(Data((token + "\n").utf8), to: file, overwrite: true)
        } catch {
            Standard.error("keylight: error: cannot write the admin token to \(file): \(error). Run `keylight token rotate` to make another.")
            throw ExitCode(1)
        }
        Standard.line("\(what) written to \(file) (0600).")
    }
}
