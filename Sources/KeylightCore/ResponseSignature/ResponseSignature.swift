/// A parsed `X-Keylight-Signature` value (protocol section 3).
public struct ResponseSignature: Hashable, Sendable {
    public let certificate: IntermediateKeyCertificate
    /// 16 random bytes, so two identical responses never share a signed message.
    public let salt: [UInt8]
    /// The intermediate key's 64-byte signature over ``message(salt:nonce:path:requestTime:body:)``.
    public let messageSignature: [UInt8]

    package init(certificate: IntermediateKeyCertificate, salt: [UInt8], messageSignature: [UInt8]) {
        self.certificate = certificate
        self.salt = salt
        self.messageSignature = messageSignature
    }

    /// Parses the 180 raw bytes.
    public init(bytes: some Collection<UInt8>) throws(ResponseSignatureError) {
        typealias Layout = ResponseSignatureLayout
        let array = Array(bytes)
        guard array.count == Layout.totalSize else { throw .wrongLength }
        certificate = IntermediateKeyCertificate(bytes: array[Layout.certificateRange])
        salt = Array(array[Layout.Component.salt.range])
        messageSignature = Array(array[Layout.Component.messageSignature.range])
    }

    /// Parses the header value (base64 of 180 bytes, either alphabet).
    public init(header: String) throws(ResponseSignatureError) {
        guard let raw = Base64.decode(header) else { throw .wrongLength }
        try self.init(bytes: raw)
    }

    /// The 180 bytes.
    public var bytes: [UInt8] { certificate.bytes + salt + messageSignature }

    /// The header value: standard base64 of the 180 bytes.
    public var header: String { Base64.encode(bytes) }

    /// `salt(16) ‖ nonce(12) ‖ path (UTF-8) ‖ request time (decimal ASCII, as in its header) ‖ body`.
    public static func message(
        salt: some Collection<UInt8>,
        nonce: some Collection<UInt8>,
        path: String,
        requestTime: String,
        body: some Collection<UInt8>
    ) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(salt.count + nonce.count + path.utf8.count + requestTime.utf8.count + body.count)
        message.append(contentsOf: salt)
        message.append(contentsOf: nonce)
        message.append(contentsOf: path.utf8)
        message.append(contentsOf: requestTime.utf8)
        message.append(contentsOf: body)
        return message
    }
}
