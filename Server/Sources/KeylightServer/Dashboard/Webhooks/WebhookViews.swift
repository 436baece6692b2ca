// View models of `webhooks.mustache`.

/// `webhooks.mustache`.
struct WebhooksView: Sendable {
    var chrome: Chrome
    var tenant: Tenant
    var canWrite: Bool
    /// Shown once, right after the endpoint was made.
    var newEndpointSecret: String?
    var endpoints: [EndpointRow]
    var deliveries: [DeliveryRow]
    var eventTypes: [EventTypeOption]
}

struct EndpointRow: Sendable {
    var id: String
    var url: String
    var events: String
    var enabled: Bool
    var disabledReason: String?
    var created: String

    init(_ endpoint: WebhookEndpoint) {
        id = endpoint.id
        url = endpoint.url
        events = endpoint.eventTypes.map(\.rawValue).joined(separator: ", ")
        enabled = endpoint.enabled
        disabledReason = endpoint.disabledReason
        created = DashboardFormat.time(endpoint.createdAt)
    }
}

struct DeliveryRow: Sendable {
    var id: String
    var endpointId: String
    /// Ended deliveries whose event is still kept can be sent again.
    var canRedeliver: Bool
    var eventType: String
    var eventId: String
    var endpointURL: String
    var status: String
    var attempts: Int
    var lastStatus: String
    var lastError: String?
    var created: String
    var next: String?

    init(_ delivery: WebhookDelivery, endpointURL: String) {
        id = delivery.id
        endpointId = delivery.endpointId
        canRedeliver = delivery.status != .pending && delivery.sealedPayload != nil
        eventType = delivery.eventType
        eventId = delivery.eventId
        self.endpointURL = endpointURL
        status = delivery.status.rawValue
        attempts = delivery.attempts
        lastStatus = delivery.lastStatusCode.map(String.init) ?? "—"
        lastError = delivery.lastError
        created = DashboardFormat.time(delivery.createdAt)
        next = delivery.status == .pending ? DashboardFormat.time(delivery.nextAttemptAt) : nil
    }
}

struct EventTypeOption: Sendable {
    var name: String
}

