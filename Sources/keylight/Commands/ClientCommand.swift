import ArgumentParser
import Foundation
import Keylight
import KeylightCore

/// `keylight client`: the SDK as a command-line app, and an example of embedding it.
struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "Use a license from the command line (the Keylight SDK on Linux).",
        subcommands: [Activate.self, Status.self, Refresh.self, Deactivate.self]
    )

    /// Given before the subcommand: `keylight client --server … activate KEY`.
    @OptionGroup var options: Options

    struct Options: ParsableArguments {
        @Option(help: "Server base URL.")
        var server: String

        @Option(help: "Tenant id.")
        var tenant: String

        @Option(help: "Product id.")
        var product: String

        @Option(help: "The product's SDK key.")
        var sdkKey: String

        @Option(help: "Trusted keys: the server's keyset document or a {\"kid\":\"base64\"} map.")
        var keys: String

        @Option(help: "Directory of the encrypted state store.")
        var store: String

        @Option(help: "License key prefix (default: the prefix of the key being activated).")
        var keyPrefix: String?

        @Option(help: "Trial days to assume until the product config is verified.")
        var trialDays = 0

        @MainActor
        func manager(keyPrefix fallback: String = "") throws -> LicenseManager {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
                throw InputFailure("--server must be an http(s) URL")
            }
            let keyset = try Keyset(json: try readInput(keys))
            return LicenseManager(configuration: Configuration(
                serverURL: url, tenantId: tenant, productId: product, sdkKey: sdkKey, keyPrefix: keyPrefix ?? fallback,
                trustedKeys: keyset.keys, trialDaysSeed: trialDays,
                store: EncryptedFileStore(directory: URL(fileURLWithPath: store))
            ))
        }
    }

    struct Activate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Activate a license key on this machine.")
        @ParentCommand var client: ClientCommand
        var options: Options { client.options }
        @Argument(help: "The license key.") var key: String

        @MainActor
        func run() async throws {
            let manager = try await loadManager(options, keyPrefix: LicenseKey.normalize(key).prefix(4).description)
            try await reportingKeylightErrors { try await manager.activate(key: key) }
            printStatus(manager)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the license state as JSON (refreshing first if due).")
        @ParentCommand var client: ClientCommand
        var options: Options { client.options }

        @MainActor
        func run() async throws {
            let manager = try await loadManager(options)
            await manager.waitUntilIdle()
            printStatus(manager)
        }
    }

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask the server now, then print the state.")
        @ParentCommand var client: ClientCommand
        var options: Options { client.options }

        @MainActor
        func run() async throws {
            let manager = try await loadManager(options)
            await manager.waitUntilIdle()
            await manager.refreshIfNeeded(force: true)
            printStatus(manager)
        }
    }

    struct Deactivate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Free this machine's slot and forget the license.")
        @ParentCommand var client: ClientCommand
        var options: Options { client.options }

        @MainActor
        func run() async throws {
            let manager = try await loadManager(options)
            try await reportingKeylightErrors { try await manager.deactivate() }
            printStatus(manager)
        }
    }
}

@MainActor
private func loadManager(_ options: ClientCommand.Options, keyPrefix: String = "") async throws -> LicenseManager {
    let manager = try reportingInputFailures { try options.manager(keyPrefix: keyPrefix) }
    await manager.checkOnLaunch()
    return manager
}

/// SDK errors: one line on stderr with the stable code, exit 1.
@MainActor
private func reportingKeylightErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as KeylightError {
        Standard.error("keylight: error: \(error.code): \(error.message)")
        throw ExitCode(1)
    }
}

/// `{"state","days_left","entitlements","instance_id","lease_expires_at","reason","last_error"}`.
@MainActor
private func printStatus(_ manager: LicenseManager) {
    var object: [String: Any] = [
        "state": manager.state.name,
        "entitlements": manager.entitlements,
        "reason": manager.reason,
        "instance_id": manager.instanceId ?? NSNull(),
        "lease_expires_at": manager.leaseExpiresAt.map { Int($0.timeIntervalSince1970) } ?? NSNull(),
        "last_error": manager.lastError?.code ?? NSNull(),
    ]
    if case .trial(let days) = manager.state { object["days_left"] = days }
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    Standard.output(data)
}
