import ArgumentParser
import Foundation
import KeylightCore
import KeylightSigning

struct LeaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease",
        abstract: "Sign and verify leases (v3) offline.",
        subcommands: [Sign.self, Verify.self]
    )

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign a lease and print its JSON.")

        @Option(help: "Signing key file from `keylight keys generate`.")
        var key: String

        @Option(help: "The license key (its keyHash goes in the lease).")
        var licenseKey: String

        @Option(help: "The instance id.")
        var instanceId: String

        @Option(help: "active, fallback or expired.")
        var status: Lease.Status = .active

        @Option(help: "Lifetime in seconds.")
        var ttl: Int64 = 7 * 86_400

        @Option(help: "Issue time, Unix seconds (default: now).")
        var issuedAt: Int64?

        @Option(help: "Comma-separated entitlement codes (active leases only).")
        var entitlements: String = ""

        func run() throws {
            try reportingInputFailures {
                let signingKey = try SigningKey.load(from: key)
                let licenseKey = try LicenseKey(licenseKey)
                guard !instanceId.isEmpty, instanceId.utf8.count <= 128 else { throw InputFailure("--instance-id must be 1-128 characters") }
                guard ttl > 0 else { throw InputFailure("--ttl must be positive") }
                let issued = issuedAt ?? SystemWallClock().unixSeconds
                let (expires, overflow) = issued.addingReportingOverflow(ttl)
                guard !overflow else { throw InputFailure("--issued-at + --ttl overflows") }
                let codes = entitlements.split(separator: ",", omittingEmptySubsequences: true)
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                let lease = try Lease.sign(
                    licenseKeyHash: licenseKey.keyHash,
                    instanceId: instanceId,
                    issuedAt: issued,
                    expiresAt: expires,
                    status: status,
                    entitlements: codes,
                    with: signingKey
                )
                Standard.output(lease.json())
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a lease against a keyset.",
            discussion: """
            Prints {"kidKnown":…,"signatureValid":…,"expired":…}. Exits 0 when the lease is trusted \
            and not expired, 1 when it is not, 2 when the input cannot be read. --lease takes a lease \
            object or a response holding one under "lease" ("-" reads standard input); --keys takes the \
            server's keyset document or a {"kid":"base64"} map.
            """
        )

        @Option(help: "Lease JSON file, or - for standard input.")
        var lease: String

        @Option(help: "Keyset JSON file.")
        var keys: String

        @Option(help: "Time to verify at, Unix seconds (default: now).")
        var now: Int64?

        func run() throws {
            let verification = try reportingInputFailures {
                let keyset = try Keyset(json: try readInput(keys))
                return try Self.readLease(try readInput(lease)).verify(with: keyset, now: now ?? SystemWallClock().unixSeconds)
            }
            print("{\"kidKnown\":\(verification.kidKnown),\"signatureValid\":\(verification.signatureValid),\"expired\":\(verification.expired)}")
            if !verification.isCurrent { throw ExitCode(1) }
        }

        /// A lease object, or an activate/validate response that carries one under `lease`.
        static func readLease(_ data: Data) throws -> Lease {
            struct Envelope: Decodable { var lease: Lease }
            if let envelope = try? JSONDecoder().decode(Envelope.self, from: data) { return envelope.lease }
            return try Lease(json: data)
        }
    }
}

// KeylightCore has no argument parser; the conformance can live only here.
extension Lease.Status: @retroactive ExpressibleByArgument {}
