import Foundation
import NIOConcurrencyHelpers
import Prometheus

/// The server's metrics, kept in a registry owned by the application (no global metrics
/// system), exposed at `/metrics` in Prometheus text format.
public struct ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Handles by label values: the registry validates names and help text on every `make…`
    /// call, which is not work to repeat per request.
    private let requestSeries = NIOLockedValueBox<[String: (Prometheus.Counter, DurationHistogram)]>([:])
    private let counters = NIOLockedValueBox<[String: Prometheus.Counter]>([:])

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
    }

    static let latencyBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(5),
    ]

    /// One finished request: `keylight_http_requests_total{route,method,status}` and
    /// `keylight_http_request_duration_seconds{route}`.
    func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = "\(route) \(method) \(status)"
        let series = requestSeries.withLockedValue { cache in
            if let found = cache[key] { return found }
            let made = (
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(namespace: "keylight", subsystem: "http", metricName: "requests", unitName: "total", helpText: "HTTP requests by route, method and status."),
                    labels: [("route", route), ("method", method), ("status", String(status))]
                ),
                registry.makeDurationHistogram(
                    descriptor: MetricNameDescriptor(namespace: "keylight", subsystem: "http", metricName: "request_duration", unitName: "seconds", helpText: "HTTP request latency by route."),
                    labels: [("route", route)],
                    buckets: Self.latencyBuckets
                )
            )
            cache[key] = made
            return made
        }
        series.0.increment()
        series.1.record(duration)
    }

    private func counter(_ name: String, help: String, result: String) -> Prometheus.Counter {
        counters.withLockedValue { cache in
            let key = name + " " + result
            if let found = cache[key] { return found }
            let made = registry.makeCounter(
                descriptor: MetricNameDescriptor(namespace: "keylight", metricName: name, unitName: "total", helpText: help),
                labels: [("result", result)]
            )
            cache[key] = made
            return made
        }
    }

    /// `keylight_activations_total{result}`: activated, existing, limit_reached, refused, not_found, invalid.
    func recordActivation(_ result: String) {
        counter("activations", help: "Activation attempts by result.", result: result).increment()
    }

    /// `keylight_validations_total{result}`: valid, fallback, expired, refused, not_found, invalid.
    func recordValidation(_ result: String) {
        counter("validations", help: "Validations by result.", result: result).increment()
    }

    /// `keylight_floating_seats_total{result}`: `expired` (freed by the sweep), `sweep_failed`
    /// (a sweep that could not reach the database; the next one retries).
    func recordFloatingSeats(_ result: String, count: Int = 1) {
        guard count > 0 else { return }
        counter("floating_seats", help: "Floating seats freed by the sweep, and sweeps that failed.", result: result).increment(by: Int64(count))
    }

    /// `keylight_backups_total{result}`: `succeeded`, `failed` (scheduled backups of `serve`).
    func recordBackup(_ result: String) {
        counter("backups", help: "Scheduled database backups by result.", result: result).increment()
    }

    /// `keylight_mails_total{result}`: `sent`, `retried`, `failed`.
    func recordMail(_ result: String) {
        counter("mails", help: "Mails to buyers by result.", result: result).increment()
    }

    /// The Prometheus text exposition.
    func render() -> [UInt8] {
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return bytes
    }
}
