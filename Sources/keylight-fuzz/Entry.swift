import Foundation

#if KEYLIGHT_LIBFUZZER
// Built with `-sanitize=fuzzer -DKEYLIGHT_LIBFUZZER`: libFuzzer supplies `main` and calls this
// once per input; the target is chosen by KEYLIGHT_FUZZ_TARGET.
// libFuzzer calls from one thread at a time (no -fork or -jobs here): no lock needed.
nonisolated(unsafe) private var target: (@Sendable ([UInt8]) -> Void)?

@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links an executable's entry point as `<module>_main`; libFuzzer's own `main` is never
/// reached, so this one hands the command line to libFuzzer's driver.
@_cdecl("keylight_fuzz_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return runFuzzerDriver(&argc, &argv, fuzzOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    if target == nil {
        guard let (_, selected) = FuzzTargets.selected(arguments: []) else {
            fatalError("set KEYLIGHT_FUZZ_TARGET to one of \(FuzzTargets.all.keys.sorted())")
        }
        target = selected
    }
    target?(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
/// Without libFuzzer: replays a corpus folder through its target (`keylight-fuzz Fuzz/Corpus/lease`),
/// so every input the fuzzer ever kept is re-run by an ordinary build.
@main struct ReplayCorpus {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard let (name, target) = FuzzTargets.selected(arguments: arguments), arguments.count == 2 else {
            FileHandle.standardError.write(Data("usage: keylight-fuzz Fuzz/Corpus/<\(FuzzTargets.all.keys.sorted().joined(separator: "|"))>\n".utf8))
            exit(64)
        }
        let folder = URL(fileURLWithPath: arguments[1])
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        for file in files { target(Array(try Data(contentsOf: file))) }
        print("\(name): \(files.count) inputs replayed")
    }
}
#endif
