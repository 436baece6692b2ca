import ArgumentParser
import Foundation
import KeylightCore
import Keylight
import KeylightTrust

struct TrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Pair devices by QR invitation and authenticate them (KeylightTrust).",
        discussion: """
        One device runs `invite` (shows a link and a QR code) and `listen`; the other runs `accept URL` \
        and `connect HOST:PORT`, which pairs the two (mutually: each stores the other) and then \
        authenticates with signed challenges. Later `connect`s only authenticate.
        """,
        subcommands: [InviteCommand.self, AcceptCommand.self, ListCommand.self, RevokeCommand.self, ListenCommand.self, ConnectCommand.self]
    )
}

/// Where this device's identity and trust store live, and what it is called.
struct TrustOptions: ParsableArguments {
    @Option(help: "Directory of an encrypted trust store (default: the Keychain on macOS, ~/.local/share/keylight/trust elsewhere).")
    var store: String?

    @Option(help: "This device's name, shown to the devices it pairs with.")
    var name: String = ProcessInfo.processInfo.hostName

    @Option(help: "The URL scheme of invitations (your app's scheme).")
    var scheme: String = "keylight"

    func node() throws -> TrustNode {
        let secureStore: any SecureStore = store.map { EncryptedFileStore(directory: URL(fileURLWithPath: $0)) } ?? TrustStorage.platformDefault(service: "trust")
        return TrustNode(identity: try DeviceIdentity.loadOrCreate(in: secureStore, name: name), store: TrustStore(store: secureStore))
    }

    var now: Int64 { SystemWallClock().unixSeconds }
}

/// Runs `body`, printing trust and socket failures as one line and exiting 1.
private func reportingTrustFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Standard.error("keylight: error: \(error)")
        throw ExitCode(1)
    }
}

struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "invite", abstract: "Make a one-time invitation: a link and a QR code.")

    @OptionGroup var options: TrustOptions

    @Option(help: "Also write the QR code as a PNG file.")
    var qrPng: String?

    @Option(help: "Also write the QR code as an SVG file.")
    var qrSvg: String?

    @Option(help: "Seconds the invitation stays valid.")
    var expiresIn: Int64 = 600

    @Flag(help: "Do not draw the QR code in the terminal.")
    var noTerminalQr = false

    func run() async throws {
        try await reportingTrustFailures {
            let node = try options.node()
            var random = SystemRandomNumberGenerator()
            let invitation = Invitation(from: node.identity, now: options.now, lifetime: max(30, min(expiresIn, 86_400)), random: &random)
            try node.store.remember(issued: invitation, now: options.now)
            let url = invitation.url(scheme: options.scheme)
            let code = try QRCode(text: url, errorCorrection: .medium)
            let renderer = QRRenderer(quietZone: 4, scale: 6)
            if let qrPng { try Data(renderer.png(code)).write(to: URL(fileURLWithPath: qrPng)) }
            if let qrSvg { try Data(renderer.svg(code).utf8).write(to: URL(fileURLWithPath: qrSvg)) }
            if !noTerminalQr { Standard.line(renderer.terminal(code)) }
            Standard.line(url)
            Standard.line("device \(node.identity.deviceId) (\(node.identity.name)); valid until \(Date(timeIntervalSince1970: TimeInterval(invitation.expiresAt)))")
        }
    }
}

struct AcceptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "accept", abstract: "Accept an invitation link; `connect` then pairs.")

    @OptionGroup var options: TrustOptions

    @Argument(help: "The invitation link (<scheme>://trust/…).")
    var url: String

    func run() async throws {
        try await reportingTrustFailures {
            let node = try options.node()
            let invitation = try Invitation.parse(url, scheme: options.scheme, now: options.now)
            try node.store.remember(accepted: invitation, scheme: options.scheme)
            Standard.line("accepted an invitation from \(invitation.name) (device \(invitation.deviceId)); run `keylight trust connect HOST:PORT` to pair")
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List trusted devices.")

    @OptionGroup var options: TrustOptions

    func run() async throws {
        try await reportingTrustFailures {
            let node = try options.node()
            Standard.line("this device: \(node.identity.deviceId) (\(node.identity.name))")
            for device in try node.store.devices() {
                Standard.line("\(device.deviceId)\t\(device.name)\ttrusted \(device.trustedAt)\tlast connected \(device.lastConnectedAt.map(String.init) ?? "never")")
            }
        }
    }
}

struct RevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Stop trusting a device.")

    @OptionGroup var options: TrustOptions

    @Argument(help: "The device id (see `list`).")
    var id: String

    func run() async throws {
        try await reportingTrustFailures {
            guard try options.node().store.revoke(deviceId: id) else {
                Standard.error("keylight: error: no trusted device \(id)")
                throw ExitCode(1)
            }
            Standard.line("revoked \(id)")
        }
    }
}

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "listen", abstract: "Answer pairings and authentications over TCP.")

    @OptionGroup var options: TrustOptions

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int = 7979

    @Option(help: "IPv4 address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Exit after this many sessions (0 = keep listening).")
    var sessions: Int = 0

    func run() async throws {
        try await reportingTrustFailures {
            let node = try options.node()
            let listener = try SocketListener(host: host, port: port)
            Standard.line("listening on \(host):\(listener.port) as \(node.identity.deviceId) (\(node.identity.name))")
            var served = 0
            while sessions == 0 || served < sessions {
                let channel = try listener.accept()
                served += 1
                do {
                    switch try await node.serve(over: channel) {
                    case .paired(let device): Standard.line("paired with \(device.name) (\(device.deviceId))")
                    case .authenticated(let device): Standard.line("authenticated \(device.name) (\(device.deviceId))")
                    }
                } catch {
                    Standard.line("refused a session: \(error)")
                }
            }
        }
    }
}

struct ConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "connect", abstract: "Pair (with an accepted invitation) and authenticate over TCP.")

    @OptionGroup var options: TrustOptions

    @Argument(help: "HOST:PORT of a device running `listen`.")
    var endpoint: String

    func run() async throws {
        try await reportingTrustFailures {
            let node = try options.node()
            if let invitation = try node.store.takeAccepted(scheme: options.scheme, now: options.now) {
                let device = try await node.pair(using: invitation, over: try SocketChannel.connect(to: endpoint))
                Standard.line("paired with \(device.name) (\(device.deviceId))")
            }
            let device = try await node.authenticate(over: try SocketChannel.connect(to: endpoint))
            Standard.line("authenticated \(device.name) (\(device.deviceId)): mutual challenge verified")
        }
    }
}
