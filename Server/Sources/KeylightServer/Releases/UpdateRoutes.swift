import Foundation
import Hummingbird
import HTTPTypes
import NIOCore
import _NIOFileSystem

/// The public update routes (protocol 6.9): `appcast.xml`, `updates/latest` and the downloads
/// they link. The lease or the product's public-feed setting decides; no SDK key is asked.
struct UpdateRoutes {
    let releases: ReleaseService

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        let releases = self.releases
        router.get("/:tenant/:product/appcast.xml") { request, context in
            let answer = try await releases.appcast(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                channel: Self.query(request, "channel"), leaseHeader: request.headers[.keylightLease], baseURL: releases.baseURL(request)
            )
            var headers = Self.validators(etag: answer.etag, isPublic: answer.isPublic)
            headers[.contentType] = "application/rss+xml; charset=utf-8"
            if request.headers[.ifNoneMatch].map({ Self.matches($0, answer.etag) }) == true {
                return Response(status: .notModified, headers: headers)
            }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        router.get("/:tenant/:product/updates/latest") { request, context in
            guard let update = try await releases.latest(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                current: Self.query(request, "current"), target: Self.query(request, "target") ?? Self.query(request, "platform"), arch: Self.query(request, "arch"),
                channel: Self.query(request, "channel"), leaseHeader: request.headers[.keylightLease], baseURL: releases.baseURL(request)
            ) else {
                return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
            }
            var response = try JSONBody.response(update)
            response.headers[.cacheControl] = "private, no-store"
            return response
        }
        router.get("/:tenant/:product/downloads/:release/:platform/:arch/:file") { request, context in
            let download = try await releases.authorizeDownload(
                tenantId: try context.parameters.require("tenant"), productId: try context.parameters.require("product"),
                releaseId: try context.parameters.require("release"), platform: try context.parameters.require("platform"),
                arch: try context.parameters.require("arch"), fileName: try context.parameters.require("file"),
                token: Self.query(request, "token"), leaseHeader: request.headers[.keylightLease]
            )
            return try await releases.serve(download, request: request, context: context)
        }
    }

    static func query(_ request: Request, _ name: String) -> String? {
        request.uri.queryParameters.get(name).flatMap { $0.isEmpty ? nil : String($0) }
    }

    /// ETag and caching: a public feed is the same for all; a device's feed is its own.
    static func validators(etag: String, isPublic: Bool) -> HTTPFields {
        var headers: HTTPFields = [.eTag: etag]
        headers[.cacheControl] = isPublic ? "public, max-age=300" : "private, no-cache"
        headers[.vary] = "X-Keylight-Lease"
        return headers
    }

    /// `If-None-Match` holds `etag` (or `*`).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { tag in
            let tag = tag.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }
}

extension ReleaseService {
    /// The base of links in feeds: `--public-url`, else the request's own host.
    func baseURL(_ request: Request) -> String {
        if let publicURL { return publicURL }
        let host = request.head.authority ?? "localhost"
        let safe = host.utf8.count <= 255 && host.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || [0x2E, 0x2D, 0x3A, 0x5B, 0x5D].contains($0) }
        return "http://" + (safe ? host : "localhost")
    }

    /// Read from disk 256 KiB at a time, one chunk after the other: a download holds the chunk
    /// being sent and the one being read, so memory under many parallel downloads is bounded by
    /// this, not by the file (NIO's chunk sequence reads up to eight ahead).
    static let chunkLength: Int64 = 256 << 10

    /// The bytes `range` of the file at `path`, read as they are sent.
    static func fileBody(path: String, range: ClosedRange<Int64>) -> ResponseBody {
        ResponseBody(contentLength: Int(range.count)) { writer in
            try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
                var offset = range.lowerBound
                while offset <= range.upperBound {
                    let chunk = try await handle.readChunk(fromAbsoluteOffset: offset, length: .bytes(Swift.min(chunkLength, range.upperBound - offset + 1)))
                    // A file that shrank under us ends the answer short rather than spinning.
                    guard chunk.readableBytes > 0 else { throw APIError.unavailable }
                    offset += Int64(chunk.readableBytes)
                    try await writer.write(chunk)
                }
            }
            try await writer.finish(nil)
        }
    }

    /// Sends the file: whole, or the range asked for, with its ETag; or hands it to the front
    /// proxy (`X-Accel-Redirect`), which then serves ranges itself.
    func serve(_ download: Download, request: Request, context: KeylightRequestContext) async throws -> Response {
        let etag = "\"" + download.artifact.sha256 + "\""
        var headers: HTTPFields = [
            .contentType: "application/octet-stream", .eTag: etag, .acceptRanges: "bytes",
            .contentDisposition: "attachment; filename=\"\(download.artifact.fileName ?? ArtifactKind.fallbackName)\"",
            .cacheControl: download.isPublic ? "public, max-age=86400" : "private, no-cache",
        ]
        if request.headers[.ifNoneMatch].map({ UpdateRoutes.matches($0, etag) }) == true {
            return Response(status: .notModified, headers: headers)
        }
        let length = download.artifact.length
        // A stale If-Range means the file changed: send it whole.
        let rangeHeader = request.headers[.ifRange].map { $0 == etag } ?? true ? request.headers[.range] : nil
        let range = ByteRange.parse(rangeHeader, length: length)
        let counts = request.method == .get && { if case .part(let part) = range { part.lowerBound == 0 } else { true } }()
        if let prefix = configuration.accelRedirectPrefix {
            headers[.xAccelRedirect] = prefix + download.artifact.sha256.prefix(2) + "/" + download.artifact.sha256
            if counts { await countDownload(download) }
            return Response(status: .ok, headers: headers)
        }
        guard try await store.length(sha256: download.artifact.sha256) == length else {
            logger.error("artifact file missing or changed", metadata: ["release": "\(download.release.id)", "sha256": "\(download.artifact.sha256)", "directory": "\(store.directory)"])
            throw APIError(status: .serviceUnavailable, code: "UNAVAILABLE", message: "The file is not in this server's artifacts folder.", retryAfter: 5)
        }
        switch range {
        case .unsatisfiable:
            return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(length)", .eTag: etag])
        case .whole:
            if counts { await countDownload(download) }
            return Response(status: .ok, headers: headers, body: Self.fileBody(path: download.path, range: 0...(length - 1)))
        case .part(let part):
            if counts { await countDownload(download) }
            headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound)/\(length)"
            return Response(status: .partialContent, headers: headers, body: Self.fileBody(path: download.path, range: part))
        }
    }
}
