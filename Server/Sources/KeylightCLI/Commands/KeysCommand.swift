import ArgumentParser
import KeylightCore
import KeylightSigning

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Ed25519 signing keys.",
        subcommands: [Generate.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a signing key file ({\"kid\",\"private_key\",\"public_key\"}, mode 0600)."
        )

        @Option(help: "Key id (default: derived from the public key).")
        var kid: String?

        @Option(help: "Where to write the key file.")
        var out: String

        @Flag(help: "Replace an existing file.")
        var force = false

        func run() throws {
            try reportingInputFailures {
                let key = try SigningKey.generate(kid: kid)
                try key.write(to: out, overwrite: force)
                print("{\"kid\":\"\(key.kid)\",\"public_key\":\"\(Base64.encode(key.publicKey.rawRepresentation))\"}")
            }
        }
    }
}
