import HTTPTypes
import Hummingbird

/// Registers routes on a Hummingbird router and remembers which methods each path has, so that
/// a known path asked with another method answers 405 with `Allow` (RFC 9110 §15.5.6) instead
/// of the router's 404. Hummingbird keeps its route table private, hence the recording.
///
/// Used only while the router is built, on one task.
final class MethodRecordingRouter<Context: RequestContext>: RouterMethods {
    let router: Router<Context>
    /// Normalised path (captures unnamed, so that `/:id` and `/:tenant` are one route, as in the trie)
    /// → the path as registered and its methods.
    private var routes: [String: (path: RouterPath, methods: Set<HTTPRequest.Method>)] = [:]
    private var order: [String] = []

    /// Methods a client may send to a known path that gets 405 when the path does not have them:
    /// the ones with a meaning for a resource, plus the QUERY draft's. HEAD is left to the router,
    /// which answers it for every GET route.
    static var answeredMethods: [HTTPRequest.Method] {
        [.get, .post, .put, .patch, .delete, .options, .trace, HTTPRequest.Method("QUERY")!]
    }

    init(_ router: Router<Context>) {
        self.router = router
    }

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        router.on(path, method: method, responder: responder)
        let key = Self.normalised(path)
        if routes[key] == nil {
            routes[key] = (path, [])
            order.append(key)
        }
        routes[key]?.methods.insert(method)
        return self
    }

    @discardableResult
    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    /// Adds the 405 answers. Call once, after every route and before the router is built; they
    /// pass through the router-level middleware added so far, not through any group's.
    func addMethodNotAllowedAnswers() {
        for key in order {
            guard let (path, methods) = routes[key] else { continue }
            var allowed = methods
            if allowed.contains(.get) { allowed.insert(.head) }
            let allow = allowed.map(\.rawValue).sorted().joined(separator: ", ")
            for method in Self.answeredMethods where !methods.contains(method) {
                router.on(path, method: method) { _, _ -> Response in
                    var response = APIError.methodNotAllowed.jsonResponse(outcomeField: nil)
                    response.headers[.allow] = allow
                    return response
                }
            }
        }
    }

    /// The path with capture names removed (`{tenant}` → `{}`): two registrations that differ only
    /// there share one trie node. (`RouterPath.Element`'s cases are not public; its description is.)
    static func normalised(_ path: RouterPath) -> String {
        path.components.map { component in
            var text = Substring(component.description)
            var out = ""
            while let open = text.firstIndex(of: "{"), let close = text[open...].firstIndex(of: "}") {
                out += text[..<open] + "{}"
                text = text[text.index(after: close)...]
            }
            return out + text
        }.joined(separator: "/")
    }
}
