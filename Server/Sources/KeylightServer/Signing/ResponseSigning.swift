import Hummingbird
import HTTPTypes
import KeylightCore
import NIOCore

/// Adds the three signature headers to a finished response.
enum ResponseSigning {
    /// The response with its body read back and `X-Keylight-Request-Time`,
    /// `X-Keylight-Signature-Kid` and `X-Keylight-Signature` added.
    static func signed(_ response: Response, nonce: ResponseNonce, tenantId: String, path: String, signer: ResponseSigner) async throws -> Response {
        let sink = BodySink()
        try await response.body.write(CollectingWriter(sink: sink))
        let bytes = Array(sink.buffer.readableBytesView)
        var signed = Response(status: response.status, headers: response.headers, body: .init(byteBuffer: sink.buffer))
        // A database error while making the day's intermediate key leaves the response unsigned (the
        // client treats it as unverified) rather than replacing an answer that may record a commit.
        if let headers = try? await signer.headers(tenantId: tenantId, nonce: nonce, path: path, body: bytes) ?? nil {
            signed.headers.append(contentsOf: headers)
        }
        return signed
    }
}

/// Collects a response body so it can be signed.
final class BodySink {
    var buffer = ByteBuffer()
}

struct CollectingWriter: ResponseBodyWriter {
    let sink: BodySink

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        sink.buffer.writeBuffer(&buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
