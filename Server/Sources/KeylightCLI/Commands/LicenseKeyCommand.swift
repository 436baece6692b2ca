import ArgumentParser
import KeylightCore

struct LicenseKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "license-key",
        abstract: "Generate, hash and mask license keys.",
        subcommands: [Generate.self, Hash.self, Mask.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print new license keys (80 random bits each).")

        @Option(help: "The product's 4-character key prefix, for example ACME.")
        var prefix: String

        @Option(help: "How many keys to print.")
        var count = 1

        func run() throws {
            try reportingInputFailures {
                guard (1...10_000).contains(count) else { throw InputFailure("--count must be 1...10000") }
                for _ in 0..<count {
                    print(try LicenseKey.generate(prefix: prefix).text)
                }
            }
        }
    }

    struct Hash: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a key's keyHash (hex SHA-256 of the normalised key).")

        @Argument(help: "The license key.")
        var key: String

        func run() throws {
            try reportingInputFailures {
                print(try LicenseKey(key).keyHash)
            }
        }
    }

    struct Mask: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a key masked for display.")

        @Argument(help: "The license key.")
        var key: String

        func run() throws {
            try reportingInputFailures {
                print(try LicenseKey(key).masked)
            }
        }
    }
}
