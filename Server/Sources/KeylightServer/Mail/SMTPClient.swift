import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Sends one mail per connection over SMTP (RFC 5321): greeting, EHLO, STARTTLS when asked,
/// AUTH PLAIN or LOGIN, MAIL FROM, RCPT TO, DATA with dot-stuffing, QUIT. Every step has a
/// deadline; a 4xx or a network failure is transient (``SMTPError/isTransient``), a 5xx final.
public struct SMTPClient: Sendable {
    public let settings: SMTPSettings
    let group: any EventLoopGroup

    public init(settings: SMTPSettings, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.settings = settings
        self.group = group
    }

    /// Delivers `message`; returns once the server has answered 250 to the data (the mail is
    /// then the server's). The connection is closed however it ends.
    public func send(_ message: MailMessage, boundary: String) async throws(SMTPError) {
        let payload = MailMessage.dataPayload(message.rendered(boundary: boundary))
        do {
            try await deliver(from: message.from.address, to: message.to.address, payload: payload)
        } catch let error as SMTPError {
            throw error
        } catch {
            throw SMTPError.connection("\(error)")
        }
    }

    private func tlsContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { configuration.trustRoots = .file(caFile) }
        return try NIOSSLContext(configuration: configuration)
    }

    private func deliver(from sender: String, to recipient: String, payload: [UInt8]) async throws {
        let settings = self.settings
        let context = settings.security == .none ? nil : try tlsContext()
        let channel: NIOAsyncChannel<SMTPReply, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.nanoseconds(Int64(settings.stepTimeout.components.seconds) * 1_000_000_000))
                .connect(host: settings.host, port: settings.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if settings.security == .tls, let context {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: Self.sniName(settings.host)))
                        }
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPReplyDecoder()))
                        return try NIOAsyncChannel<SMTPReply, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw SMTPError.connection("\(settings.host):\(settings.port): \(error)")
        }
        try await channel.executeThenClose { inbound, outbound in
            var session = SMTPSession(channel: channel.channel, replies: inbound.makeAsyncIterator(), outbound: outbound, timeout: settings.stepTimeout)
            try await session.expect("greeting", 220)
            var extensions = try await session.ehlo(settings.heloName)
            if settings.security == .starttls {
                guard extensions.contains(where: { $0.uppercased() == "STARTTLS" }) else {
                    throw SMTPError.unsupported("\(settings.host) does not offer STARTTLS (it offers \(extensions.joined(separator: ", "))); use tls=tls for port 465, or tls=none for a local relay")
                }
                try await session.command("STARTTLS", "STARTTLS", 220)
                guard let context else { throw SMTPError.unsupported("no TLS context") }
                let host = Self.sniName(settings.host)
                try await channel.channel.eventLoop.submit {
                    try channel.channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: host), position: .first)
                }.get()
                extensions = try await session.ehlo(settings.heloName)
            }
            if let username = settings.username, let password = settings.password {
                guard settings.security != .none || settings.isLoopback else {
                    throw SMTPError.unsupported("refusing to send the SMTP password without TLS to \(settings.host) (use tls=starttls or tls=tls)")
                }
                try await session.authenticate(username: username, password: password, extensions: extensions)
            }
            try await session.command("MAIL FROM:<\(sender)>", "MAIL FROM", 250)
            try await session.command("RCPT TO:<\(recipient)>", "RCPT TO", 250, 251)
            try await session.command("DATA", "DATA", 354)
            try await session.write(payload, "the message")
            try await session.expect("the message", 250)
            // Delivered: a failing QUIT changes nothing.
            _ = try? await session.command("QUIT", "QUIT", 221)
        }
    }

    /// TLS server names are host names, never addresses.
    static func sniName(_ host: String) -> String? {
        host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
    }
}

/// One SMTP conversation: commands, replies, deadlines.
struct SMTPSession {
    let channel: any Channel
    var replies: NIOAsyncChannelInboundStream<SMTPReply>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let timeout: Duration

    /// The next reply; closes the connection if none comes within the deadline.
    mutating func read(_ step: String) async throws -> SMTPReply {
        var replies = self.replies
        defer { self.replies = replies }
        return try await withDeadline(step) {
            guard let reply = try await replies.next() else { throw SMTPError.connection("closed by the server during \(step)") }
            return reply
        }
    }

    func write(_ bytes: [UInt8], _ step: String) async throws {
        let outbound = self.outbound
        try await withDeadline(step) { try await outbound.write(ByteBuffer(bytes: bytes)) }
    }

    /// Runs `body`, closing the connection if it has not finished within the step's deadline;
    /// whatever it then fails with is reported as the timeout it was.
    private func withDeadline<T>(_ step: String, _ body: () async throws -> T) async throws -> T {
        let timedOut = NIOLockedValueBox(false)
        let channel = self.channel
        let watchdog = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)) {
            timedOut.withLockedValue { $0 = true }
            channel.close(promise: nil)
        }
        defer { watchdog.cancel() }
        do {
            return try await body()
        } catch {
            if timedOut.withLockedValue({ $0 }) { throw SMTPError.timeout(step) }
            if let error = error as? SMTPError { throw error }
            throw SMTPError.connection("\(step): \(error)")
        }
    }

    mutating func expect(_ step: String, _ codes: Int...) async throws {
        let reply = try await read(step)
        guard codes.contains(reply.code) else { throw SMTPError.reply(step, reply) }
    }

    /// Sends `line` and expects one of `codes`.
    @discardableResult
    mutating func command(_ line: String, _ step: String, _ codes: Int...) async throws -> SMTPReply {
        try await write(Array((line + "\r\n").utf8), step)
        let reply = try await read(step)
        guard codes.contains(reply.code) else { throw SMTPError.reply(step, reply) }
        return reply
    }

    /// EHLO; answers the extensions the server lists (`STARTTLS`, `AUTH PLAIN LOGIN`, …).
    mutating func ehlo(_ name: String) async throws -> [String] {
        let reply = try await command("EHLO \(name)", "EHLO", 250)
        return Array(reply.lines.dropFirst())
    }

    /// AUTH PLAIN when offered, else AUTH LOGIN; 535 (bad credentials) is final.
    mutating func authenticate(username: String, password: String, extensions: [String]) async throws {
        let mechanisms = Set(extensions.first { $0.uppercased().hasPrefix("AUTH ") || $0.uppercased().hasPrefix("AUTH=") }?
            .uppercased().dropFirst(5).split(separator: " ").map(String.init) ?? [])
        if mechanisms.contains("PLAIN") || mechanisms.isEmpty {
            let token = Data(([0] + Array(username.utf8) + [0] + Array(password.utf8))).base64EncodedString()
            try await command("AUTH PLAIN \(token)", "AUTH PLAIN", 235)
        } else if mechanisms.contains("LOGIN") {
            try await command("AUTH LOGIN", "AUTH LOGIN", 334)
            try await command(Data(username.utf8).base64EncodedString(), "AUTH LOGIN (user)", 334)
            try await command(Data(password.utf8).base64EncodedString(), "AUTH LOGIN (password)", 235)
        } else {
            throw SMTPError.unsupported("the server offers neither AUTH PLAIN nor AUTH LOGIN (it offers \(mechanisms.sorted().joined(separator: " ")))")
        }
    }
}
