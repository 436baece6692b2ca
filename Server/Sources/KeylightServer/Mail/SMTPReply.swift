import NIOCore

/// One SMTP reply: its three-digit code and its text lines (one, or several for `250-…`).
struct SMTPReply: Sendable, Equatable {
    let code: Int
    let lines: [String]

    var isPositive: Bool { (200..<400).contains(code) }
    /// 4xx: try again later. 5xx: final.
    var isTransient: Bool { (400..<500).contains(code) }
    var text: String { lines.joined(separator: " ") }
}

/// Splits the server's bytes into replies: lines `DDD-text` continue a reply, `DDD text` (or
/// `DDD`) ends it (RFC 5321 4.2.1). Lines and replies are bounded: a server is outside input too.
struct SMTPReplyDecoder: ByteToMessageDecoder {
    typealias InboundOut = SMTPReply
    static let maxLine = 4_096
    static let maxLines = 200
    private var pending: [String] = []

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > Self.maxLine { throw SMTPError.protocolViolation("a reply line longer than \(Self.maxLine) bytes") }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex + 1
        guard length <= Self.maxLine, var bytes = buffer.readBytes(length: length) else {
            throw SMTPError.protocolViolation("a reply line longer than \(Self.maxLine) bytes")
        }
        // Bytes, not Characters: "\r\n" is one Character, so a String's hasSuffix("\n") misses it.
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
        let line = String(decoding: bytes, as: UTF8.self)
        guard bytes.count >= 3, bytes[0..<3].allSatisfy({ (0x30...0x39).contains($0) }), let code = Int(String(decoding: bytes[0..<3], as: UTF8.self)),
              bytes.count == 3 || bytes[3] == UInt8(ascii: " ") || bytes[3] == UInt8(ascii: "-") else {
            throw SMTPError.protocolViolation("not an SMTP reply: \(line.prefix(80))")
        }
        let text = bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : ""
        pending.append(text)
        guard pending.count <= Self.maxLines else { throw SMTPError.protocolViolation("a reply of more than \(Self.maxLines) lines") }
        if bytes.count > 3 && bytes[3] == UInt8(ascii: "-") { return .continue }
        context.fireChannelRead(Self.wrapInboundOut(SMTPReply(code: code, lines: pending)))
        pending = []
        return .continue
    }
}

/// Why a mail was not accepted.
public struct SMTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// Worth trying again later (a 4xx, a timeout, a refused connection); a 5xx is not.
    public let isTransient: Bool

    static func reply(_ step: String, _ reply: SMTPReply) -> Self {
        Self(description: "\(step): \(reply.code) \(reply.text.prefix(200))", isTransient: reply.isTransient)
    }
    static func timeout(_ step: String) -> Self { Self(description: "\(step): no answer in time", isTransient: true) }
    static func connection(_ reason: String) -> Self { Self(description: "connection: \(reason)", isTransient: true) }
    static func protocolViolation(_ reason: String) -> Self { Self(description: "protocol: \(reason)", isTransient: true) }
    public static func unsupported(_ reason: String) -> Self { Self(description: reason, isTransient: false) }
}
