import Foundation

extension KeylightError {
    /// What went wrong, for code to branch on. The wire keeps its strings (``KeylightError/code``);
    /// a server code this SDK does not know is ``server``.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// The text is not a license key of this app's format.
        case invalidKeyFormat
        /// The server could not be reached (no network, timeout, TLS failure).
        case network
        /// The server answered with an error of its own (5xx, maintenance) or a reply that could not be read.
        case serverUnavailable
        /// Too many requests; the server said when to try again.
        case rateLimited
        /// The server's lease is not signed by a key this app trusts.
        case untrustedLease
        /// Every seat of the license is in use (``KeylightError/seats`` lists them).
        case activationLimitReached
        case licenseRevoked
        case licenseSuspended
        case licenseExpired
        /// This device's activation was removed on the server.
        case instanceInactive
        /// The server knows no such license key (or tenant or product: a configuration mistake).
        case notFound
        /// The server refused the app's SDK key.
        case unauthorized
        /// The server refused the request as malformed.
        case invalidRequest
        case noAppStorePurchase
        case notActivated
        case offlineFile
        /// The secure store cannot be read until the device is unlocked.
        case storageLocked
        case storage
        /// The app's configuration cannot work (a missing Info.plist entry, a bad key).
        case configuration
        /// App Transport Security blocked a plain-http server URL.
        case appTransportSecurity
        /// A sandboxed Mac app without the outgoing-connections entitlement.
        case missingNetworkEntitlement
        /// A response whose signature did not verify, in the enforced mode.
        case signatureVerificationFailed
        /// Another refusal from the server; ``KeylightError/code`` holds its code.
        case server
    }

    /// The kind of this error.
    public var kind: Kind {
        switch code {
        case "INVALID_KEY_FORMAT": .invalidKeyFormat
        case "TRANSIENT": .network
        case "BAD_RESPONSE", "INTERNAL", "UNAVAILABLE": .serverUnavailable
        case "RATE_LIMITED", "HTTP_429": .rateLimited
        case "UNTRUSTED_LEASE": .untrustedLease
        case "ACTIVATION_LIMIT_REACHED": .activationLimitReached
        case "LICENSE_REVOKED": .licenseRevoked
        case "LICENSE_SUSPENDED": .licenseSuspended
        case "LICENSE_EXPIRED": .licenseExpired
        case "INSTANCE_INACTIVE": .instanceInactive
        case "NOT_FOUND": .notFound
        case "UNAUTHORIZED": .unauthorized
        case "INVALID_REQUEST", "PAYLOAD_TOO_LARGE": .invalidRequest
        case "NO_APPSTORE_PURCHASE": .noAppStorePurchase
        case "NOT_ACTIVATED": .notActivated
        case "OFFLINE_FILE": .offlineFile
        case "STORAGE_LOCKED": .storageLocked
        case "STORAGE": .storage
        case "CONFIGURATION": .configuration
        case "APP_TRANSPORT_SECURITY": .appTransportSecurity
        case "NETWORK_ENTITLEMENT_MISSING": .missingNetworkEntitlement
        case "SIGNATURE_VERIFICATION_FAILED": .signatureVerificationFailed
        case let other where other.hasPrefix("HTTP_5"): .serverUnavailable
        default: .server
        }
    }

    /// Whether the same call may succeed later without anything changing in the app or the
    /// license: the network, the server's own trouble, a rate limit, a locked device. A
    /// configuration mistake or the server's verdict never is.
    public var isRetryable: Bool {
        switch kind {
        case .network, .serverUnavailable, .rateLimited, .storageLocked, .signatureVerificationFailed: true
        default: false
        }
    }

    /// App Transport Security refused a plain-http server URL: the app must use https (or, for a
    /// development server, an ATS exception in its Info.plist). Not retried.
    public static let appTransportSecurity = Self(
        code: "APP_TRANSPORT_SECURITY",
        message: "App Transport Security blocked the license server's http:// address."
    )

    /// A sandboxed Mac app without `com.apple.security.network.client` cannot connect anywhere. Not retried.
    public static let missingNetworkEntitlement = Self(
        code: "NETWORK_ENTITLEMENT_MISSING",
        message: "This sandboxed app lacks the com.apple.security.network.client entitlement."
    )
}
