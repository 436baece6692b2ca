import ArgumentParser
import Foundation
import Keylight
import KeylightCore

extension ClientCommand {
    struct Devices: ClientAction {
        static let configuration = CommandConfiguration(
            abstract: "List the devices using a license as JSON: {\"activation_limit\",\"devices\":[{\"instance_id\",\"name\",…}]}."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "The license key (default: this machine's license).") var key: String?
        var keyPrefix: String { ClientCommand.prefix(of: key) }
        var printsStatus: Bool { false }

        func perform(_ manager: LicenseManager) async throws {
            let seats = if let key { try await manager.devices(key: key) } else { try await manager.devices() }
            let devices: [[String: Any]] = seats.devices.map {
                [
                    "instance_id": $0.id, "name": $0.name, "activated_at": Int($0.activatedAt.timeIntervalSince1970),
                    "last_seen_at": Int($0.lastSeenAt.timeIntervalSince1970), "offline": $0.isOffline, "this_device": $0.isThisDevice,
                ]
            }
            let object: [String: Any] = ["activation_limit": seats.activationLimit, "devices": devices]
            Standard.output((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
        }
    }

    struct OfflineRequest: ClientAction {
        static let configuration = CommandConfiguration(
            commandName: "offline-request",
            abstract: "On the offline machine: print (or write) its activation request file."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "Write the file here instead of standard output.") var out: String?
        var printsStatus: Bool { false }

        func perform(_ manager: LicenseManager) async throws {
            try emit(try manager.offlineActivationRequest(), to: out)
        }
    }

    struct OfflineActivate: ClientAction {
        static let configuration = CommandConfiguration(
            commandName: "offline-activate",
            abstract: "On a machine online: turn an offline machine's request file into its response file."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "The request file (- for standard input).") var request: String
        @Argument(help: "The license key.") var key: String
        @Option(help: "Write the response here instead of standard output.") var out: String?
        var keyPrefix: String { ClientCommand.prefix(of: key) }
        var printsStatus: Bool { false }

        func perform(_ manager: LicenseManager) async throws {
            let text = try ClientCommand.readText(request)
            try emit(try await manager.offlineActivationResponse(forRequest: text, key: key), to: out)
        }
    }

    struct OfflineImport: ClientAction {
        static let configuration = CommandConfiguration(
            commandName: "offline-import",
            abstract: "On the offline machine: import the response file (no network needed), then print the state."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "The response file (- for standard input).") var response: String
        @Argument(help: "The license key the response was made for.") var key: String
        var keyPrefix: String { ClientCommand.prefix(of: key) }

        func perform(_ manager: LicenseManager) async throws {
            let text = try ClientCommand.readText(response)
            try manager.activate(offlineResponse: text, key: key)
        }
    }

    struct OfflineDeactivate: ClientAction {
        static let configuration = CommandConfiguration(
            commandName: "offline-deactivate",
            abstract: "On the offline machine: forget the license and print the deactivation proof that frees its seat."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "Write the proof here instead of standard output.") var out: String?
        var printsStatus: Bool { false }

        func perform(_ manager: LicenseManager) async throws {
            try emit(try manager.offlineDeactivationProof(), to: out)
        }
    }

    struct SubmitProof: ClientAction {
        static let configuration = CommandConfiguration(
            commandName: "submit-proof",
            abstract: "On a machine online: submit an offline machine's deactivation proof, freeing its seat."
        )
        @ParentCommand var client: ClientCommand
        @Option(help: "The proof file (- for standard input).") var proof: String
        @Argument(help: "The license key.") var key: String
        var keyPrefix: String { ClientCommand.prefix(of: key) }
        var printsStatus: Bool { false }

        func perform(_ manager: LicenseManager) async throws {
            let text = try ClientCommand.readText(proof)
            try await manager.submitDeactivationProof(text, key: key)
            Standard.line("{\"deactivated\":true}")
        }
    }
}

/// Writes an offline file to `path` (0600: a response holds a lease for this machine), or to
/// standard output.
private func emit(_ text: String, to path: String?) throws {
    guard let path else {
        FileHandle.standardOutput.write(Data(text.utf8))
        return
    }
    try reportingInputFailures { try SecretFile.write(Data(text.utf8), to: path) }
}
