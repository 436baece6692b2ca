import Foundation
import HTTPTypes
@testable import KeylightServer
import NIOConcurrencyHelpers
import Testing

/// A minimal browser for route tests: keeps cookies, follows nothing by itself, and remembers
/// the CSRF token of the last page it saw.
final class DashboardBrowser: Sendable {
    let client: Client
    private let state = NIOLockedValueBox<(cookies: [String: String], csrf: String?, setCookies: [String])>(([:], nil, []))

    init(_ client: Client) { self.client = client }

    var csrf: String? { state.withLockedValue { $0.csrf } }
    var cookies: [String: String] { state.withLockedValue { $0.cookies } }
    /// Every `Set-Cookie` header received, in order.
    var setCookies: [String] { state.withLockedValue { $0.setCookies } }

    func get(_ path: String) async throws -> Reply {
        try await send(.get, path, body: nil)
    }

    /// Posts a form; `csrf` nil sends the token of the last page, "" sends none.
    func post(_ path: String, _ fields: [(String, String)] = [], csrf: String? = nil) async throws -> Reply {
        var all = fields
        let token = csrf ?? self.csrf ?? ""
        if !token.isEmpty { all.append(("_csrf", token)) }
        return try await send(.post, path, body: FormEncoding.encode(all))
    }

    /// Posts `body` as it is, with the last page's CSRF token appended.
    func postRaw(_ path: String, body: String) async throws -> Reply {
        try await send(.post, path, body: body + "&_csrf=" + FormEncoding.escape(csrf ?? ""))
    }

    /// Signs in through the form; answers the reply to the sign-in POST.
    @discardableResult
    func signIn(_ email: String, _ password: String, next: String? = nil) async throws -> Reply {
        _ = try await get("/dashboard/login" + (next.map { "?" + FormEncoding.encode([("next", $0)]) } ?? ""))
        var fields = [("email", email), ("password", password)]
        if let next { fields.append(("next", next)) }
        let reply = try await post("/dashboard/login", fields)
        // Like a browser, land on the page signed in (which carries the session's own CSRF token).
        if reply.status == .seeOther, let location = reply.location { _ = try await get(location) }
        return reply
    }

    private func send(_ method: HTTPRequest.Method, _ path: String, body: String?) async throws -> Reply {
        var headers: HTTPFields = [:]
        let jar = cookies
        if !jar.isEmpty { headers[.cookie] = jar.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        let reply = try await client.request(method, path, headers: headers, body: body)
        state.withLockedValue { state in
            for header in reply.headers[values: .setCookie] {
                state.setCookies.append(header)
                let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                let expired = header.lowercased().contains("max-age=0") || header.contains("1970")
                state.cookies[pair[0]] = expired ? nil : pair[1]
            }
            if let token = Self.csrfToken(in: reply.text) { state.csrf = token }
        }
        return reply
    }

    static func csrfToken(in html: String) -> String? {
        guard let range = html.range(of: #"name="_csrf" value=""#) else { return nil }
        let rest = html[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}

extension Reply {
    var location: String? { headers[.location] }
}
