import Foundation

/// One mail as it goes on the wire: RFC 5322 headers and a multipart/alternative body (plain
/// text first, HTML second), both UTF-8 in base64, so no line of any body can be too long or be
/// taken for the end of the data.
public struct MailMessage: Sendable, Equatable {
    public var from: MailAddress
    public var to: MailAddress
    public var replyTo: MailAddress?
    public var subject: String
    public var text: String
    public var html: String
    /// `<random@sender's domain>`, made once per mail so a resent copy is a new message.
    public var messageId: String
    public var date: Date
    /// The one-click opt-out of a mail the buyer did not ask for (a reminder): an https URL sent
    /// as `List-Unsubscribe` with `List-Unsubscribe-Post` (RFC 8058), so the mail client's own
    /// "Unsubscribe" POSTs to it. nil: neither header.
    public var listUnsubscribe: String?

    public init(
        from: MailAddress, to: MailAddress, replyTo: MailAddress? = nil, subject: String, text: String, html: String, messageId: String, date: Date,
        listUnsubscribe: String? = nil
    ) {
        self.from = from
        self.to = to
        self.replyTo = replyTo
        self.subject = subject
        self.text = text
        self.html = html
        self.messageId = messageId
        self.date = date
        self.listUnsubscribe = listUnsubscribe
    }

    /// A new Message-ID under the sender's domain.
    static func newMessageId(from: MailAddress, using random: inout some RandomNumberGenerator) -> String {
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "keylight.invalid"
        let token = (0..<16).map { _ in String(UInt8.random(in: 0...255, using: &random), radix: 16) }.joined()
        return "<\(token).keylight@\(domain)>"
    }

    /// The message with CRLF line ends, ready for DATA (before dot-stuffing).
    public func rendered(boundary: String) -> String {
        var lines: [String] = [
            "Date: \(Self.rfc5322Date(date))",
            "From: \(from.header)",
            "To: \(to.header)",
        ]
        if let replyTo { lines.append("Reply-To: \(replyTo.header)") }
        if let listUnsubscribe {
            lines += ["List-Unsubscribe: <\(listUnsubscribe)>", "List-Unsubscribe-Post: List-Unsubscribe=One-Click"]
        }
        lines += [
            "Subject: \(MIMEEncoding.unstructured(subject))",
            "Message-ID: \(messageId)",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "Auto-Submitted: auto-generated",
            "",
            "--\(boundary)",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "",
            MIMEEncoding.base64Lines(Data(text.utf8)),
            "--\(boundary)",
            "Content-Type: text/html; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "",
            MIMEEncoding.base64Lines(Data(html.utf8)),
            "--\(boundary)--",
            "",
        ]
        return lines.joined(separator: "\r\n")
    }

    /// `Tue, 24 Nov 2026 21:51:47 +0000`.
    static func rfc5322Date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[(parts.weekday ?? 1) - 1]), \(parts.day ?? 1) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }

    /// DATA's payload: every line starting with "." gets another (RFC 5321 4.5.2), bare CR and
    /// LF become CRLF, and the terminating "CRLF . CRLF" is added.
    static func dataPayload(_ rendered: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rendered.utf8.count + 64)
        var atLineStart = true
        var previous: UInt8 = 0
        for byte in rendered.utf8 {
            if byte == 0x0A {
                if previous != 0x0D { out.append(0x0D) }
                out.append(0x0A)
                atLineStart = true
            } else if byte == 0x0D {
                out.append(0x0D)
                atLineStart = false
            } else {
                if previous == 0x0D { out.append(0x0A); atLineStart = true }
                if atLineStart && byte == 0x2E { out.append(0x2E) }
                out.append(byte)
                atLineStart = false
            }
            previous = byte
        }
        if previous == 0x0D { out.append(0x0A) }
        if !(out.suffix(2) == [0x0D, 0x0A]) { out += [0x0D, 0x0A] }
        out += Array(".\r\n".utf8)
        return out
    }
}
