import Hummingbird
import NIOCore

/// Health, metrics and the public keyset.
struct OpsRoutes {
    let keyRing: KeyRing
    let metrics: ServerMetrics

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.get("/healthz") { _, _ in
            JSONBody.raw(Array(#"{"status":"ok"}"#.utf8))
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
}
