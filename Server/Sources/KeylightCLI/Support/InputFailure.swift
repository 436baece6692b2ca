import ArgumentParser
import Foundation

/// A problem with what the user gave the command: reported as one line on stderr, exit code 2.
struct InputFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, turning any error into one `keylight: error: …` line on stderr and exit code 2,
/// so scripts see a stable code and people never see a stack trace.
func reportingInputFailures<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Standard.error("keylight: error: \(error)")
        throw ExitCode(2)
    }
}

/// The async form of ``reportingInputFailures(_:)``.
func reportingInputFailuresAsync<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Standard.error("keylight: error: \(error)")
        throw ExitCode(2)
    }
}

/// Reads a file, or standard input for `-`.
func readInput(_ path: String) throws -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard let data = FileManager.default.contents(atPath: path) else { throw InputFailure("\(path): cannot be read") }
    return data
}

enum Standard {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A line on stdout, flushed at once (stdout may be a pipe read by another process).
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func output(_ data: Data) {
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
