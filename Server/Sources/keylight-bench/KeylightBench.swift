import ArgumentParser
import KeylightServer

/// `keylight-bench`: prints one JSON line per benchmark. Build it in release mode:
/// `swift run -c release keylight-bench`.
@main
struct KeylightBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keylight-bench",
        abstract: "Keylight benchmarks (JSON lines on stdout).",
        subcommands: [
            CoreBenchmarks.self, ServerBenchmarks.self, SDKBenchmarks.self, DatabaseBenchmarks.self, BackupBenchmarks.self, ReleaseBenchmarks.self,
            InstructionBenchmarks.self, ServeChild.self, PacedClient.self,
        ],
        defaultSubcommand: CoreBenchmarks.self
    )

    static func main() async {
        // The served benchmarks measure the server as `keylight serve` runs it.
        EventLoopExecutor.adopt()
        await main(nil)
    }
}
