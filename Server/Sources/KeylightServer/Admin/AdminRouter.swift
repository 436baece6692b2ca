import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The admin API's routes, registered through one place so that every route that changes
/// something reads its body the same way: whole (up to the body limit), decoded strictly (a field
/// the endpoint does not define is 400 `UNKNOWN_FIELD`), and under `Idempotency-Key` for POSTs and PATCHes.
/// A route has no other way to reach its body.
struct AdminRouter {
    let group: RouterGroup<KeylightRequestContext>
    let limits: ServerLimits
    let idempotency: IdempotencyKeys
    /// Every route registered, with the body fields it takes (tests hold openapi.yaml to it).
    let table: RouteTable

    typealias Handler = @Sendable (Request, KeylightRequestContext) async throws -> Response
    typealias BodyHandler<Body> = @Sendable (Body, Request, KeylightRequestContext) async throws -> Response

    func get(_ path: RouterPath, _ handler: @escaping Handler) {
        table.add("GET", path, fields: nil)
        group.get(path) { request, context in try await handler(request, context) }
    }

    func delete(_ path: RouterPath, _ handler: @escaping Handler) {
        table.add("DELETE", path, fields: [])
        let limit = limits.maxBodyBytes
        group.delete(path) { request, context in
            let bytes = try await Self.read(request, limit: limit)
            if bytes.readableBytes > 0 { _ = try StrictDecoding.json(NoFields.self, from: bytes.readableBytesView) }
            return try await handler(request, context)
        }
    }

    /// A POST that takes no fields: no body, or an empty object.
    func post(_ path: RouterPath, _ handler: @escaping Handler) {
        post(path, optionalBody: NoFields.self) { _, request, context in try await handler(request, context) }
    }

    /// A POST whose body is `Body` (required).
    func post<Body: Decodable & Sendable>(_ path: RouterPath, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("POST", path, fields: StrictDecoding.fieldNames(of: Body.self))
        let (limit, idempotency) = (limits.maxBodyBytes, self.idempotency)
        group.post(path) { request, context in
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    /// A POST whose body may be left out (nil), or is `Body`.
    func post<Body: Decodable & Sendable>(_ path: RouterPath, optionalBody: Body.Type, _ handler: @escaping BodyHandler<Body?>) {
        table.add("POST", path, fields: StrictDecoding.fieldNames(of: Body.self))
        let (limit, idempotency) = (limits.maxBodyBytes, self.idempotency)
        group.post(path) { request, context in
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(bytes.readableBytes == 0 ? nil : try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    func put<Body: Decodable & Sendable>(_ path: RouterPath, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("PUT", path, fields: StrictDecoding.fieldNames(of: Body.self))
        let limit = limits.maxBodyBytes
        group.put(path) { request, context in
            try await handler(try StrictDecoding.json(Body.self, from: try await Self.read(request, limit: limit).readableBytesView), request, context)
        }
    }

    func patch<Body: Decodable & Sendable>(_ path: RouterPath, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("PATCH", path, fields: StrictDecoding.fieldNames(of: Body.self))
        let (limit, idempotency) = (limits.maxBodyBytes, self.idempotency)
        group.patch(path) { request, context in
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    private static func read(_ request: Request, limit: Int) async throws -> ByteBuffer {
        var request = request
        return try await request.collectJSONBody(limit: limit)
    }
}

/// The body of a route that takes no fields: every field is unknown.
struct NoFields: Decodable, Sendable {
    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: AnyCodingKey.self)
    }
}

/// Routes as registered: method, path (`/admin/v1/tenants/:tenant`), and the body or form fields
/// taken (nil for a route without a body, empty for one that takes none). Tests walk it.
public final class RouteTable: Sendable {
    public struct Route: Sendable, Hashable {
        public let method: String
        public let path: String
        public let fields: [String]?
    }

    private let box = NIOLockedValueBox<[Route]>([])
    let prefix: String

    init(prefix: String) {
        self.prefix = prefix
    }

    public var routes: [Route] { box.withLockedValue { $0 } }

    func add(_ method: String, _ path: RouterPath, fields: [String]?) {
        let route = Route(method: method, path: prefix + "/" + path.description.drop { $0 == "/" }, fields: fields)
        box.withLockedValue { $0.append(route) }
    }
}
