import Hummingbird
import NIOCore

/// Health, metrics and the public keyset.
struct OpsRoutes {
    let keyRing: KeyRing
    let metrics: ServerMetrics
    let readiness: Readiness

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        // Liveness: the process answers HTTP.
        router.get("/healthz") { _, _ in
            JSONBody.raw(Array(#"{"status":"ok"}"#.utf8))
        }
        // Readiness: send traffic here (load balancers, orchestrators); 503 once a drain begins.
        router.get("/readyz") { _, _ in
            guard let reason = await readiness.unreadiness() else { return JSONBody.raw(Array(#"{"status":"ready"}"#.utf8)) }
            var response = JSONBody.raw(Array(#"{"status":"unavailable","reason":"\#(reason)"}"#.utf8))
            response.status = .serviceUnavailable
            response.headers[.cacheControl] = "no-store"
            return response
        }
        router.get("/metrics") { _, _ in
            JSONBody.raw(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        router.get("/.well-known/keylight-keys.json") { _, _ in
            var response = JSONBody.raw(keyRing.current.documentJSON)
            // Apps and proxies may cache briefly; a rotation is visible within a minute.
            response.headers[.cacheControl] = "public, max-age=60"
            return response
        }
    }

    /// Protocol 6.1: one tenant's keyset (next, active, grace) with the kid that signs now.
    /// Registered behind the per-address limit: an unknown tenant costs a database lookup.
    func registerTenantKeysets(on router: some RouterMethods<KeylightRequestContext>) {
        router.get("/:tenant/.well-known/keylight-keys") { _, context in
            let tenantId = try context.parameters.require("tenant")
            guard TenantPath.isValidId(tenantId), !TenantPath.reserved.contains(tenantId),
                  let keys = try await keyRing.keys(for: tenantId) else { throw APIError.notFound("Tenant") }
            var response = JSONBody.raw(keys.documentJSON)
            response.headers[.cacheControl] = "public, max-age=60"
            return response
        }
    }
}
