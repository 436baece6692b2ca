import Foundation
import KeylightTestSupport
import NIOConcurrencyHelpers
import Testing

/// `keylight trust`: two processes pair over loopback, then authenticate with the mutual challenge.
@Suite(.timeLimit(.minutes(6))) struct TrustCommandTests {
    /// A `keylight trust listen` child process, its output collected.
    final class Listener: Sendable {
        let process: Process
        private let output: PipeCollector
        let port: Int

        init(store: String, sessions: Int) async throws {
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["trust", "listen", "--store", store, "--name", "Studio Mac", "--port", "0", "--sessions", String(sessions)]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = PipeCollector(pipe)
            self.output = output
            self.process = process
            var found: Int?
            for _ in 0..<200 where found == nil {
                try await Task.sleep(for: .milliseconds(50))
                let text = output.text
                if let range = text.range(of: "listening on 127.0.0.1:") { found = Int(text[range.upperBound...].prefix { $0.isNumber }) }
            }
            port = try #require(found, "listener did not start: \(output.text)")
        }

        var text: String { output.text }

        func waitForExit() async -> Int32 {
            for _ in 0..<200 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning { process.terminate() }
            // Reading the status of a live process traps: wait for the exit the signal causes.
            for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
            return process.isRunning ? -1 : process.terminationStatus
        }
    }

    @Test func twoProcessesPairOverLoopbackAndAuthenticate() async throws {
        let root = try temporaryDirectory()
        let mac = root.appendingPathComponent("mac").path, phone = root.appendingPathComponent("phone").path
        let png = root.appendingPathComponent("invite.png").path

        let invite = try await CLI.run(["trust", "invite", "--store", mac, "--name", "Studio Mac", "--qr-png", png])
        #expect(invite.status == 0, "\(invite.stderr)")
        let url = try #require(invite.stdout.split(separator: "\n").first { $0.hasPrefix("keylight://trust/") }.map(String.init))
        #expect(invite.stdout.contains("▀") || invite.stdout.contains("▄"))  // the QR code in the terminal
        let image = try Data(contentsOf: URL(fileURLWithPath: png))
        #expect(image.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))

        let listener = try await Listener(store: mac, sessions: 3)
        let accepted = try await CLI.run(["trust", "accept", url, "--store", phone, "--name", "Ada's iPhone"])
        #expect(accepted.status == 0 && accepted.stdout.contains("accepted an invitation from Studio Mac"))

        let first = try await CLI.run(["trust", "connect", "127.0.0.1:\(listener.port)", "--store", phone, "--name", "Ada's iPhone"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("paired with Studio Mac") && first.stdout.contains("authenticated Studio Mac"))
        let again = try await CLI.run(["trust", "connect", "127.0.0.1:\(listener.port)", "--store", phone, "--name", "Ada's iPhone"])
        #expect(again.status == 0 && !again.stdout.contains("paired") && again.stdout.contains("authenticated Studio Mac"))
        #expect(await listener.waitForExit() == 0)
        #expect(listener.text.contains("paired with Ada's iPhone") && listener.text.components(separatedBy: "authenticated Ada's iPhone").count == 3)

        // Both sides stored each other, persistently.
        let macList = try await CLI.run(["trust", "list", "--store", mac])
        let phoneList = try await CLI.run(["trust", "list", "--store", phone])
        #expect(macList.stdout.contains("Ada's iPhone") && phoneList.stdout.contains("Studio Mac"))
        let phoneId = try #require(phoneList.stdout.split(separator: "\n").first.flatMap { $0.split(separator: " ").dropFirst(2).first }.map(String.init))

        // The used invitation cannot pair anyone else.
        let stranger = root.appendingPathComponent("stranger").path
        _ = try await CLI.run(["trust", "accept", url, "--store", stranger])
        let replayListener = try await Listener(store: mac, sessions: 1)
        let replay = try await CLI.run(["trust", "connect", "127.0.0.1:\(replayListener.port)", "--store", stranger])
        #expect(replay.status == 1 && replay.stderr.contains("unknown_invitation"))
        _ = await replayListener.waitForExit()

        // Revoked on the Mac: the phone can no longer authenticate.
        let revoke = try await CLI.run(["trust", "revoke", phoneId, "--store", mac])
        #expect(revoke.status == 0, "\(revoke.stdout) \(revoke.stderr)")
        #expect(try await CLI.run(["trust", "revoke", phoneId, "--store", mac]).status == 1)
        let revokedListener = try await Listener(store: mac, sessions: 1)
        let refused = try await CLI.run(["trust", "connect", "127.0.0.1:\(revokedListener.port)", "--store", phone])
        #expect(refused.status == 1 && refused.stderr.contains("unknown_device"))
        _ = await revokedListener.waitForExit()
    }

    @Test func badInvitationsAndEndpointsAreClearErrors() async throws {
        let store = try temporaryDirectory().path
        for (link, message) in [("not a link", "not a Keylight trust invitation"), ("other://trust/abc", "another app"),
                                ("keylight://trust/" + Data(#"{"v":9}"#.utf8).base64EncodedString(), "newer version")] {
            let result = try await CLI.run(["trust", "accept", link, "--store", store])
            #expect(result.status == 1 && result.stderr.contains(message), "\(link): \(result.stderr)")
        }
        let nowhere = try await CLI.run(["trust", "connect", "127.0.0.1:9", "--store", store])
        #expect(nowhere.status == 1 && nowhere.stderr.contains("cannot connect"))
        #expect(try await CLI.run(["trust", "connect", "no-port", "--store", store]).status == 1)
    }
}
