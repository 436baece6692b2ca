import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The admin API's routes, registered through one place so that every route that changes
/// something reads its body the same way: whole (up to the body limit), decoded strictly (a field
/// the endpoint does not define is 400 `UNKNOWN_FIELD`), and under `Idempotency-Key` for POSTs and PATCHes.
/// A route has no other way to reach its body.
///
/// Every route names the ``Permission`` it needs where it is registered (the parameter is not
/// optional), and the router asks ``AdminService/authorize(_:_:tenantId:productId:)`` with the
/// route's `:tenant` and `:product` before the body is read or the handler runs.
struct AdminRouter {
    let group: RouterGroup<KeylightRequestContext>
    let limits: ServerLimits
    let idempotency: IdempotencyKeys
    let service: AdminService
    /// Every route registered, with the body fields it takes (tests hold openapi.yaml to it).
    let table: RouteTable

    typealias Handler = @Sendable (Request, KeylightRequestContext) async throws -> Response
    typealias BodyHandler<Body> = @Sendable (Body, Request, KeylightRequestContext) async throws -> Response

    func get(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        table.add("GET", path, fields: nil, permission: permission)
        let service = self.service
        group.get(path) { request, context in
            try Self.authorize(service, permission, context)
            return try await handler(request, context)
        }
    }

    func delete(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        table.add("DELETE", path, fields: [], permission: permission)
        let (limit, service) = (limits.maxBodyBytes, self.service)
        group.delete(path) { request, context in
            try Self.authorize(service, permission, context)
            let bytes = try await Self.read(request, limit: limit)
            if bytes.readableBytes > 0 { _ = try StrictDecoding.json(NoFields.self, from: bytes.readableBytesView) }
            return try await handler(request, context)
        }
    }

    /// A POST that takes no fields: no body, or an empty object.
    func post(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        post(path, permission, optionalBody: NoFields.self) { _, request, context in try await handler(request, context) }
    }

    /// A POST whose body is `Body` (required).
    func post<Body: Decodable & Sendable>(_ path: RouterPath, _ permission: Permission, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("POST", path, fields: StrictDecoding.fieldNames(of: Body.self), permission: permission)
        let (limit, idempotency, service) = (limits.maxBodyBytes, self.idempotency, self.service)
        group.post(path) { request, context in
            try Self.authorize(service, permission, context)
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    /// A POST whose body may be left out (nil), or is `Body`.
    func post<Body: Decodable & Sendable>(_ path: RouterPath, _ permission: Permission, optionalBody: Body.Type, _ handler: @escaping BodyHandler<Body?>) {
        table.add("POST", path, fields: StrictDecoding.fieldNames(of: Body.self), permission: permission)
        let (limit, idempotency, service) = (limits.maxBodyBytes, self.idempotency, self.service)
        group.post(path) { request, context in
            try Self.authorize(service, permission, context)
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(bytes.readableBytes == 0 ? nil : try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    func put<Body: Decodable & Sendable>(_ path: RouterPath, _ permission: Permission, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("PUT", path, fields: StrictDecoding.fieldNames(of: Body.self), permission: permission)
        let (limit, service) = (limits.maxBodyBytes, self.service)
        group.put(path) { request, context in
            try Self.authorize(service, permission, context)
            return try await handler(try StrictDecoding.json(Body.self, from: try await Self.read(request, limit: limit).readableBytesView), request, context)
        }
    }

    func patch<Body: Decodable & Sendable>(_ path: RouterPath, _ permission: Permission, body: Body.Type, _ handler: @escaping BodyHandler<Body>) {
        table.add("PATCH", path, fields: StrictDecoding.fieldNames(of: Body.self), permission: permission)
        let (limit, idempotency, service) = (limits.maxBodyBytes, self.idempotency, self.service)
        group.patch(path) { request, context in
            try Self.authorize(service, permission, context)
            let bytes = try await Self.read(request, limit: limit)
            return try await idempotency.run(request, body: bytes) {
                try await handler(try StrictDecoding.json(Body.self, from: bytes.readableBytesView), request, context)
            }
        }
    }

    /// A PUT whose body is a file, handed to the handler as a stream: the one kind of route
    /// exempt from the body limit (the handler sets its own) and, through
    /// ``RequestProgressHandler``, from the whole-request deadline (an idle timeout instead).
    func putFile(_ path: RouterPath, _ permission: Permission, _ handler: @escaping Handler) {
        table.add("PUT", path, fields: nil, permission: permission)
        let service = self.service
        group.put(path) { request, context in
            try Self.authorize(service, permission, context)
            // A JSON body here is a request meant for another route, not a file.
            if let type = request.headers[.contentType], type.lowercased().hasPrefix("application/json") {
                throw APIError.invalidRequest("This route takes the file itself as its body (Content-Type: application/octet-stream), not JSON.")
            }
            return try await handler(request, context)
        }
    }

    /// The route's permission, over its `:tenant` and `:product` (none: a server-wide route).
    private static func authorize(_ service: AdminService, _ permission: Permission, _ context: KeylightRequestContext) throws {
        guard let principal = context.principal else { throw APIError.unauthorized }
        try service.authorize(principal, permission, tenantId: context.parameters.get("tenant"), productId: context.parameters.get("product"))
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

/// Routes as registered: method, path (`/admin/v1/tenants/:tenant`), the body or form fields
/// taken (nil for a route without a body, empty for one that takes none), and the permission it
/// needs. Tests walk it.
public final class RouteTable: Sendable {
    public struct Route: Sendable, Hashable {
        public let method: String
        public let path: String
        public let fields: [String]?
        /// The permission the route needs; nil: the dashboard user's own account only.
        public let permission: Permission?
    }

    private let box = NIOLockedValueBox<[Route]>([])
    let prefix: String

    init(prefix: String) {
        self.prefix = prefix
    }

    public var routes: [Route] { box.withLockedValue { $0 } }

    func add(_ method: String, _ path: RouterPath, fields: [String]?, access: SignedInRoutes.Access) {
        switch access {
        case .permission(let permission): add(method, path, fields: fields, permission: permission)
        case .ownAccount: add(method, path, fields: fields, permission: nil)
        }
    }

    func add(_ method: String, _ path: RouterPath, fields: [String]?, permission: Permission?) {
        let route = Route(method: method, path: prefix + "/" + path.description.drop { $0 == "/" }, fields: fields, permission: permission)
        box.withLockedValue { $0.append(route) }
    }
}
