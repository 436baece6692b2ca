import Foundation
import Keylight

/// A failure as the license window shows it: what happened, what it means, and the buttons that
/// help. Built from the SDK's error by kind, so each case has its own way out.
public struct LicenseFailure: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case wrongKey, revoked, expired, offline, configuration, untrusted, other
    }

    /// What a failure's buttons do.
    public enum Action: Hashable, Sendable {
        case retry
        case editKey
        /// Open the page where the license is renewed or upgraded.
        case renew(URL)
        case activateOffline
        case contactSupport(email: String)
    }

    public let kind: Kind
    public let title: String
    public let message: String
    public let actions: [Action]
    /// The SDK's error behind it (for logs; its `failureReason` helps the developer).
    public let error: KeylightError

    /// The button title of `action`.
    public static func title(of action: Action, _ strings: UIStrings) -> String {
        switch action {
        case .retry: strings[.retryButton]
        case .editKey: strings[.editKeyButton]
        case .renew: strings[.renewButton]
        case .activateOffline: strings[.activateOfflineButton]
        case .contactSupport: strings[.contactSupportButton]
        }
    }

    init(_ error: KeylightError, strings: UIStrings, renewURL: URL?, supportEmail: String?) {
        self.error = error
        let support = supportEmail.map { [Action.contactSupport(email: $0)] } ?? []
        switch error.kind {
        case .invalidKeyFormat, .notFound:
            kind = .wrongKey
            title = strings[.wrongKeyTitle]
            message = strings[.wrongKeyMessage]
            actions = [.editKey]
        case .licenseRevoked, .licenseSuspended, .instanceInactive:
            kind = .revoked
            title = strings[.revokedTitle]
            message = strings[.revokedMessage]
            actions = [.editKey] + support
        case .licenseExpired:
            kind = .expired
            title = strings[.expiredTitle]
            message = strings[.expiredMessage]
            actions = (renewURL.map { [Action.renew($0)] } ?? []) + [.editKey]
        case .network, .serverUnavailable, .rateLimited, .storageLocked:
            kind = .offline
            title = strings[.offlineTitle]
            message = strings[.offlineMessage]
            actions = [.retry, .activateOffline]
        case .configuration, .appTransportSecurity, .missingNetworkEntitlement, .unauthorized, .invalidRequest:
            kind = .configuration
            title = strings[.configurationTitle]
            message = strings[.configurationMessage]
            actions = support
        case .untrustedLease, .signatureVerificationFailed:
            kind = .untrusted
            title = strings[.untrustedTitle]
            message = strings[.untrustedMessage]
            actions = [.retry] + support
        default:
            kind = .other
            title = strings[.failedTitle]
            message = error.localizedDescription
            actions = [.retry, .editKey] + support
        }
    }
}
