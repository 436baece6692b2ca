import ArgumentParser
import KeylightServer

/// The `keylight` command: server, admin, offline tools and an SDK client.
@main
struct Keylight: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keylight",
        abstract: "Self-hosted licensing for Swift apps.",
        subcommands: [ServeCommand.self, MigrateCommand.self, BackupCommand.self, RestoreCommand.self, HealthCommand.self, AdminCommand.self, TokenCommand.self, TrustCommand.self, ClientCommand.self, KeysCommand.self, LeaseCommand.self, LicenseKeyCommand.self, ReleaseCommand.self]
    )

    static func main() async {
        // Before any task runs: request handlers then run on the event loops (see EventLoopExecutor).
        EventLoopExecutor.adopt()
        await main(nil)
    }
}
