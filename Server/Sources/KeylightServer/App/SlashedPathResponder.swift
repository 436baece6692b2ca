import Hummingbird
import HTTPTypes

/// Paths with an empty segment. The hosted JavaScript client joins a base URL that ends in `/`
/// with `/{tenant}/…`, so it asks for `//{tenant}/{product}/activate`: such a path is served as
/// the path without the extra slash, for the SDK API and the keyset only. Anywhere else a path
/// with an empty segment is 404 (Hummingbird's router would otherwise match it, and cookies
/// scoped to `/dashboard` or `/portal/…` would not follow it there).
public struct SlashedPathResponder<Base: HTTPResponder>: HTTPResponder where Base.Context == KeylightRequestContext {
    public typealias Context = KeylightRequestContext
    let base: Base

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard let path = request.head.path, path.prefix(while: { $0 != "?" }).contains("//") else {
            return try await base.respond(to: request, context: context)
        }
        guard let served = Self.served(path) else { return APIError.notFound("Route").jsonResponse(outcomeField: nil) }
        var head = request.head
        head.path = served
        return try await base.respond(to: Request(head: head, body: request.body), context: context)
    }

    /// The path to serve for `path` (which has an empty segment), or nil for none: one leading
    /// extra slash before an SDK API or keyset path.
    static func served(_ path: String) -> String? {
        guard path.hasPrefix("//") else { return nil }
        let collapsed = String(path.dropFirst())
        let route = collapsed.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard !route.contains("//") else { return nil }
        let segments = route.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard let first = segments.first.map(String.init) else { return nil }
        if first == ".well-known" { return collapsed }  // the server-wide keyset
        guard TenantPath.isValidId(first), !TenantPath.reserved.contains(first), segments.count >= 2 else { return nil }
        return collapsed
    }
}
