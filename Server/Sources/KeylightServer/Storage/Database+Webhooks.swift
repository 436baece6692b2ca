import Foundation
import SQLKit

/// A registered outbound webhook endpoint (its secret stays sealed).
public struct WebhookEndpoint: Codable, Sendable, Hashable {
    public var id: String
    public var tenantId: String
    public var url: String
    var sealedSecret: String
    /// `,license.created,instance.activated,` form, so one LIKE picks subscribers.
    var events: String
    public var enabled: Bool
    public var disabledReason: String?
    public var createdAt: Int64
    public var updatedAt: Int64

    public var eventTypes: [WebhookEventType] {
        events.split(separator: ",").compactMap { WebhookEventType(rawValue: String($0)) }
    }

    enum CodingKeys: String, CodingKey {
        case id, tenantId = "tenant_id", url, sealedSecret = "sealed_secret", events, enabled, disabledReason = "disabled_reason"
        case createdAt = "created_at", updatedAt = "updated_at"
    }
}

/// Where a delivery stands.
public enum WebhookDeliveryStatus: String, Codable, Sendable {
    /// Waiting for its next attempt.
    case pending
    case delivered
    /// Gave up after the retry window.
    case failed
    /// The endpoint answered 410 Gone or was disabled: no more attempts.
    case stopped
}

/// One event's delivery to one endpoint.
public struct WebhookDelivery: Codable, Sendable, Hashable {
    public var id: String
    public var endpointId: String
    public var tenantId: String
    public var eventId: String
    public var eventType: String
    var sealedPayload: String?
    public var status: WebhookDeliveryStatus
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastAttemptAt: Int64?
    public var lastStatusCode: Int?
    public var lastError: String?
    public var createdAt: Int64
    public var finishedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id, endpointId = "endpoint_id", tenantId = "tenant_id", eventId = "event_id", eventType = "event_type"
        case sealedPayload = "sealed_payload", status, attempts, nextAttemptAt = "next_attempt_at", lastAttemptAt = "last_attempt_at"
        case lastStatusCode = "last_status_code", lastError = "last_error", createdAt = "created_at", finishedAt = "finished_at"
    }
}

/// What a redelivery request did.
enum RedeliveryOutcome: Sendable {
    case scheduled(WebhookDelivery)
    case notFound
    case endpointDisabled
    /// The payload was dropped (deliveries keep theirs for 30 days after they end).
    case payloadExpired
    /// The delivery is being attempted right now.
    case inFlight
}

/// How an attempt ended, as the dispatcher records it.
enum DeliveryResult: Sendable, Equatable {
    case delivered(statusCode: Int)
    /// Try again at `at`.
    case retry(at: Int64, statusCode: Int?, error: String)
    /// The retry window is over.
    case failed(statusCode: Int?, error: String)
    /// 410 Gone: this delivery and every pending one to the endpoint stop, and the endpoint is disabled.
    case gone
    /// The endpoint was disabled or deleted meanwhile.
    case stopped(reason: String)
}

extension Database {
    static let endpointColumns: SQLQueryString = "id, tenant_id, url, sealed_secret, events, enabled, disabled_reason, created_at, updated_at"
    static let deliveryColumns: SQLQueryString = "id, endpoint_id, tenant_id, event_id, event_type, sealed_payload, status, attempts, next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, finished_at"

    // MARK: Endpoints

    func insertWebhookEndpoint(_ endpoint: WebhookEndpoint, actor: AuditActor) async throws {
        try await write { db in
            try await db.raw("""
                INSERT INTO webhook_endpoints (\(Self.endpointColumns)) VALUES (
                    \(bind: endpoint.id), \(bind: endpoint.tenantId), \(bind: endpoint.url), \(bind: endpoint.sealedSecret), \(bind: endpoint.events),
                    \(bind: endpoint.enabled), \(bind: endpoint.disabledReason), \(bind: endpoint.createdAt), \(bind: endpoint.updatedAt))
                """).run()
            try await Self.audit(db, at: endpoint.createdAt, actor: actor, action: "webhook_endpoint.create", tenantId: endpoint.tenantId, target: endpoint.id, details: [
                "url": endpoint.url, "events": endpoint.events,
            ])
        }
    }

    public func webhookEndpoints(tenantId: String) async throws -> [WebhookEndpoint] {
        try await sql.raw("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = \(bind: tenantId) ORDER BY created_at, id")
            .all(decoding: WebhookEndpoint.self)
    }

    public func webhookEndpoint(tenantId: String, id: String) async throws -> WebhookEndpoint? {
        try await sql.raw("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)")
            .first(decoding: WebhookEndpoint.self)
    }

    /// Deletes an endpoint and its delivery history; false when there is no such endpoint.
    func deleteWebhookEndpoint(tenantId: String, id: String, now: Int64, actor: AuditActor) async throws -> Bool {
        try await write { db in
            guard try await db.raw("SELECT id FROM webhook_endpoints WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)").first() != nil else { return false }
            try await db.raw("DELETE FROM webhook_deliveries WHERE endpoint_id = \(bind: id)").run()
            try await db.raw("DELETE FROM webhook_endpoints WHERE id = \(bind: id)").run()
            try await Self.audit(db, at: now, actor: actor, action: "webhook_endpoint.delete", tenantId: tenantId, target: id)
            return true
        }
    }

    /// Turns an endpoint on or off; turning it off stops its pending deliveries. nil when there is no such endpoint.
    func setWebhookEndpointEnabled(tenantId: String, id: String, enabled: Bool, reason: String?, now: Int64, actor: AuditActor) async throws -> WebhookEndpoint? {
        try await write { db in
            try await Self.setEndpointEnabled(db, tenantId: tenantId, id: id, enabled: enabled, reason: reason, now: now, actor: actor)
        }
    }

    private static func setEndpointEnabled(_ db: any SQLDatabase, tenantId: String, id: String, enabled: Bool, reason: String?, now: Int64, actor: AuditActor) async throws -> WebhookEndpoint? {
        guard let endpoint = try await db.raw("""
            UPDATE webhook_endpoints SET enabled = \(bind: enabled), disabled_reason = \(bind: enabled ? nil : reason), updated_at = \(bind: now)
            WHERE tenant_id = \(bind: tenantId) AND id = \(bind: id)
            RETURNING \(endpointColumns)
            """).first(decoding: WebhookEndpoint.self) else { return nil }
        if !enabled {
            try await db.raw("""
                UPDATE webhook_deliveries SET status = 'stopped', finished_at = \(bind: now)
                WHERE endpoint_id = \(bind: id) AND status = 'pending'
                """).run()
        }
        try await audit(db, at: now, actor: actor, action: enabled ? "webhook_endpoint.enable" : "webhook_endpoint.disable", tenantId: tenantId, target: id, details: reason.map { ["reason": $0] } ?? [:])
        return endpoint
    }

    // MARK: Deliveries

    /// Newest first, for one endpoint or for the whole tenant.
    public func webhookDeliveries(tenantId: String, endpointId: String? = nil, limit: Int) async throws -> [WebhookDelivery] {
        var query: SQLQueryString = "SELECT \(Self.deliveryColumns) FROM webhook_deliveries WHERE tenant_id = \(bind: tenantId)"
        if let endpointId { query += " AND endpoint_id = \(bind: endpointId)" }
        query += " ORDER BY created_at DESC, id DESC LIMIT \(literal: limit)"
        return try await sql.raw(query).all(decoding: WebhookDelivery.self)
    }

    /// Takes up to `limit` due deliveries for `lease` seconds, counting the attempt: at most
    /// `perEndpoint` of one endpoint, and none of an endpoint that still has an attempt in
    /// flight, so a slow receiver holds up only its own deliveries. A process that dies
    /// mid-attempt loses only the lease: the delivery is due again when it lapses.
    ///
    /// The lock conditions are repeated outside the subquery so that, where two processes race
    /// for the same row, the database re-checks them on the row the winner wrote and the loser
    /// skips it.
    func claimDueDeliveries(now: Int64, limit: Int, perEndpoint: Int, lease: Int64) async throws -> [WebhookDelivery] {
        try await write { db in
            try await db.raw("""
                UPDATE webhook_deliveries SET locked_until = \(bind: now + lease), attempts = attempts + 1, last_attempt_at = \(bind: now)
                WHERE id IN (
                    SELECT id FROM (
                        SELECT d.id, d.next_attempt_at,
                               ROW_NUMBER() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS place
                        FROM webhook_deliveries d
                        WHERE d.status = 'pending' AND d.next_attempt_at <= \(bind: now) AND d.locked_until <= \(bind: now)
                          AND NOT EXISTS (
                              SELECT 1 FROM webhook_deliveries busy
                              WHERE busy.endpoint_id = d.endpoint_id AND busy.status = 'pending' AND busy.locked_until > \(bind: now))
                    ) due
                    WHERE place <= \(literal: perEndpoint)
                    ORDER BY next_attempt_at LIMIT \(literal: limit)
                ) AND status = 'pending' AND locked_until <= \(bind: now)
                RETURNING \(Self.deliveryColumns)
                """).all(decoding: WebhookDelivery.self)
        }
    }

    /// Sends a delivery's event to its endpoint again, as a new delivery with its own retry
    /// window; a pending one that is not in flight is simply made due now.
    func redeliver(tenantId: String, endpointId: String, deliveryId: String, now: Int64, actor: AuditActor) async throws -> RedeliveryOutcome {
        let lock = lockRows(of: "webhook_deliveries")
        return try await write { db in
            guard let source = try await db.raw("""
                SELECT \(Self.deliveryColumns) FROM webhook_deliveries
                WHERE id = \(bind: deliveryId) AND tenant_id = \(bind: tenantId) AND endpoint_id = \(bind: endpointId)\(lock)
                """).first(decoding: WebhookDelivery.self) else { return .notFound }
            guard let endpoint = try await db.raw("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE id = \(bind: endpointId)")
                .first(decoding: WebhookEndpoint.self), endpoint.enabled else { return .endpointDisabled }
            guard let payload = source.sealedPayload else { return .payloadExpired }
            let delivery: WebhookDelivery?
            if source.status == .pending {
                delivery = try await db.raw("""
                    UPDATE webhook_deliveries SET next_attempt_at = \(bind: now)
                    WHERE id = \(bind: deliveryId) AND status = 'pending' AND locked_until <= \(bind: now)
                    RETURNING \(Self.deliveryColumns)
                    """).first(decoding: WebhookDelivery.self)
                guard delivery != nil else { return .inFlight }
            } else {
                // A fresh suffix: two redeliveries of one event at once must not collide.
                let id = "\(source.eventId):\(endpointId):r\(UUID().uuidString.prefix(8).lowercased())"
                delivery = try await db.raw("""
                    INSERT INTO webhook_deliveries (id, endpoint_id, tenant_id, event_id, event_type, sealed_payload, status, attempts, next_attempt_at, locked_until, created_at)
                    VALUES (\(bind: id), \(bind: endpointId), \(bind: tenantId), \(bind: source.eventId), \(bind: source.eventType), \(bind: payload),
                            'pending', 0, \(bind: now), 0, \(bind: now))
                    RETURNING \(Self.deliveryColumns)
                    """).first(decoding: WebhookDelivery.self)
            }
            guard let delivery else { return .notFound }
            try await Self.audit(db, at: now, actor: actor, action: "webhook_delivery.redeliver", tenantId: tenantId, target: delivery.id, details: [
                "endpoint_id": endpointId, "event_id": source.eventId, "from": deliveryId,
            ])
            return .scheduled(delivery)
        }
    }

    /// Drops the payloads of deliveries that ended before `cutoff` (they can no longer be
    /// redelivered); returns how many.
    @discardableResult
    func purgeDeliveryPayloads(finishedBefore cutoff: Int64) async throws -> Int {
        try await write { db in
            try await db.raw("""
                UPDATE webhook_deliveries SET sealed_payload = NULL
                WHERE status <> 'pending' AND sealed_payload IS NOT NULL AND finished_at < \(bind: cutoff) RETURNING id
                """).all().count
        }
    }

    /// Records how an attempt ended.
    func recordDelivery(_ delivery: WebhookDelivery, result: DeliveryResult, now: Int64) async throws {
        try await write { db in
            switch result {
            case .delivered(let code):
                try await db.raw("""
                    UPDATE webhook_deliveries SET status = 'delivered', last_status_code = \(bind: code), last_error = NULL,
                        finished_at = \(bind: now), locked_until = 0
                    WHERE id = \(bind: delivery.id) AND attempts = \(bind: delivery.attempts)
                    """).run()
            case .retry(let at, let code, let error):
                try await db.raw("""
                    UPDATE webhook_deliveries SET next_attempt_at = \(bind: at), locked_until = 0, last_status_code = \(bind: code), last_error = \(bind: error)
                    WHERE id = \(bind: delivery.id) AND status = 'pending' AND attempts = \(bind: delivery.attempts)
                    """).run()
            case .failed(let code, let error):
                try await db.raw("""
                    UPDATE webhook_deliveries SET status = 'failed', last_status_code = \(bind: code), last_error = \(bind: error),
                        finished_at = \(bind: now), locked_until = 0
                    WHERE id = \(bind: delivery.id) AND attempts = \(bind: delivery.attempts)
                    """).run()
            case .gone:
                try await db.raw("""
                    UPDATE webhook_deliveries SET status = 'stopped', last_status_code = 410, last_error = 'Gone',
                        finished_at = \(bind: now), locked_until = 0
                    WHERE id = \(bind: delivery.id) AND attempts = \(bind: delivery.attempts)
                    """).run()
                _ = try await Self.setEndpointEnabled(db, tenantId: delivery.tenantId, id: delivery.endpointId, enabled: false, reason: "The endpoint answered 410 Gone.", now: now, actor: .system)
            case .stopped(let reason):
                try await db.raw("""
                    UPDATE webhook_deliveries SET status = 'stopped', last_error = \(bind: reason), finished_at = \(bind: now), locked_until = 0
                    WHERE id = \(bind: delivery.id) AND attempts = \(bind: delivery.attempts)
                    """).run()
            }
        }
    }
}
