import ArgumentParser
import Foundation
import Keylight
import KeylightHTTPTransport
import KeylightCore

/// `keylight client`: the SDK as a command-line app, and an example of embedding it.
struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "Use a license from the command line (the Keylight SDK on Linux).",
        subcommands: [
            Activate.self, Status.self, Refresh.self, Deactivate.self, ReleaseSeat.self, Devices.self,
            OfflineRequest.self, OfflineActivate.self, OfflineImport.self, OfflineDeactivate.self, SubmitProof.self,
        ]
    )

    /// The product prefix of the key given on the command line (2-8 characters, protocol 6.1),
    /// which the manager is configured to accept; "" without a key.
    static func prefix(of key: String?) -> String {
        key.flatMap { try? LicenseKey($0) }?.prefix ?? ""
    }

    /// The text of a file argument (`-` for standard input).
    static func readText(_ path: String) throws -> String {
        String(decoding: try reportingInputFailures { try readInput(path) }, as: UTF8.self)
    }

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

        @Option(help: "Signed responses: disabled, informational or enforced.")
        var verification: VerificationMode = .informational

        @Option(help: "This build's release date (2026-11-22): a license whose updates ended earlier runs limited.")
        var appReleaseDate: String?

        @MainActor
        func manager(keyPrefix fallback: String = "") throws -> LicenseManager {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
                throw InputFailure("--server must be an http(s) URL")
            }
            let keyset = try Keyset(json: try readInput(keys))
            let releaseDate = try appReleaseDate.map { text in
                guard let date = Configuration.releaseDate(text) else { throw InputFailure("--app-release-date must be a date such as 2026-11-22") }
                return date
            }
            return LicenseManager(configuration: Configuration(
                serverURL: url, tenantId: tenant, productId: product, sdkKey: sdkKey, keyPrefix: keyPrefix ?? fallback,
                trustedKeys: keyset.keys, trialDaysSeed: trialDays, verificationMode: verification, appReleaseDate: releaseDate,
                store: EncryptedFileStore(directory: URL(fileURLWithPath: store)), transport: HTTPClientTransport(baseURL: url)
            ))
        }
    }

    struct Activate: ClientAction {
        static let configuration = CommandConfiguration(abstract: "Activate a license key on this machine.")
        @ParentCommand var client: ClientCommand
        @Argument(help: "The license key.") var key: String
        var keyPrefix: String { ClientCommand.prefix(of: key) }

        func perform(_ manager: LicenseManager) async throws {
            try await manager.activate(key: key)
        }
    }

    struct Status: ClientAction {
        static let configuration = CommandConfiguration(abstract: "Print the license state as JSON (refreshing first if due).")
        @ParentCommand var client: ClientCommand

        func perform(_ manager: LicenseManager) async throws {}
    }

    struct Refresh: ClientAction {
        static let configuration = CommandConfiguration(abstract: "Ask the server now, then print the state.")
        @ParentCommand var client: ClientCommand

        func perform(_ manager: LicenseManager) async throws {
            await manager.refreshIfNeeded(force: true)
        }
    }

    struct ReleaseSeat: ClientAction {
        static let configuration = CommandConfiguration(
            abstract: "Give a floating license's seat back (as an app does when it quits); the key is kept, and the next command takes a seat again."
        )
        @ParentCommand var client: ClientCommand

        func perform(_ manager: LicenseManager) async throws {
            guard manager.isFloating else { throw KeylightError(code: "NOT_FLOATING", message: "This license's seats do not float: use `client deactivate`.") }
            guard await manager.releaseSeat() else { throw manager.lastError ?? KeylightError.notActivated }
        }
    }

    struct Deactivate: ClientAction {
        static let configuration = CommandConfiguration(
            abstract: "Free this machine's slot and forget the license, or free another device's slot (--instance)."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "The instance id of another device to free (see `client devices`); this machine keeps its license.")
        var instance: String?
        @Option(help: "The license key whose device to free (default: this machine's license).")
        var key: String?
        var keyPrefix: String { ClientCommand.prefix(of: key) }

        func perform(_ manager: LicenseManager) async throws {
            guard let instance else {
                try await manager.deactivate()
                return
            }
            let seats = if let key { try await manager.devices(key: key) } else { try await manager.devices() }
            guard let device = seats.devices.first(where: { $0.id == instance }) else {
                throw KeylightError(code: "NOT_FOUND", message: "No active device of this license has instance id \(instance).")
            }
            try await manager.deactivate(device: device)
        }
    }
}

/// A `keylight client` subcommand: launch the manager (and let a due refresh finish), act,
/// print the state. SDK errors are one `keylight: error: CODE: message` line and exit 1.
protocol ClientAction: AsyncParsableCommand {
    var client: ClientCommand { get }
    /// The key prefix to accept (only activation knows it).
    var keyPrefix: String { get }
    /// Whether the state is printed after ``perform(_:)`` (not by commands whose output is a file).
    var printsStatus: Bool { get }
    @MainActor func perform(_ manager: LicenseManager) async throws
}

extension ClientAction {
    var keyPrefix: String { "" }
    var printsStatus: Bool { true }

    @MainActor
    func run() async throws {
        let manager = try reportingInputFailures { try client.options.manager(keyPrefix: keyPrefix) }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        do {
            try await perform(manager)
        } catch let error as KeylightError {
            Standard.error("keylight: error: \(error.code): \(error.message)")
            if let seats = error.seats {
                Standard.error("keylight: \(seats.devices.count) of \(seats.activationLimit) devices in use; free one with `client deactivate --key KEY --instance ID`:")
                for device in seats.devices { Standard.error("  \(device.id)  \(device.name)") }
            }
            throw ExitCode(1)
        }
        if printsStatus { printStatus(manager) }
    }
}

// The SDK package has no argument parser; the conformance can live only here.
extension VerificationMode: @retroactive ExpressibleByArgument {}

/// `{"state","days_left","entitlements","instance_id","lease_expires_at","reason","last_error","verification"}`, plus
/// `floating`, `over_limit` and `updates_until` when they apply.
@MainActor
private func printStatus(_ manager: LicenseManager) {
    var object: [String: Any] = [
        "state": manager.state.name,
        "entitlements": manager.entitlements,
        "reason": manager.reason,
        "instance_id": manager.instanceId ?? NSNull(),
        "lease_expires_at": manager.leaseExpiresAt.map { Int($0.timeIntervalSince1970) } ?? NSNull(),
        "last_error": manager.lastError?.code ?? NSNull(),
        "verification": manager.lastVerification.description,
    ]
    if case .trial(let days) = manager.state { object["days_left"] = days }
    if manager.isFloating { object["floating"] = true }
    if manager.isOverLimit { object["over_limit"] = true }
    if let until = manager.updatesEntitledUntil { object["updates_until"] = Int(until.timeIntervalSince1970) }
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    Standard.output(data)
}
