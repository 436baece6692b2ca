import Foundation
#if os(macOS)
import Security
#endif

/// Turns a request that got no answer into the error the app sees. Two configuration mistakes
/// look like "offline" to URLSession and would be retried for ever: App Transport Security
/// blocking an http:// server, and a sandboxed Mac app without the network-client entitlement.
struct NetworkFailure {
    /// This process's value for an entitlement (macOS reads its own signature; nil elsewhere).
    var entitlement: @Sendable (String) -> Any?

    static let live = NetworkFailure(entitlement: { name in
        #if os(macOS)
        guard let task = SecTaskCreateFromSelf(nil) else { return nil }
        return SecTaskCopyValueForEntitlement(task, name as CFString, nil)
        #else
        nil
        #endif
    })

    /// `NSURLErrorAppTransportSecurityRequiresSecureConnection`.
    static let appTransportSecurityCode = -1022

    func error(for failure: any Error) -> KeylightError {
        if let keylight = failure as? KeylightError { return keylight }
        let code = (failure as? URLError)?.errorCode ?? (failure as NSError).code
        let domain = (failure as? URLError).map { _ in NSURLErrorDomain } ?? (failure as NSError).domain
        if domain == NSURLErrorDomain, code == Self.appTransportSecurityCode { return .appTransportSecurity }
        if isSandboxedWithoutNetworkClient { return .missingNetworkEntitlement }
        return .transient("offline: \(failure.localizedDescription)")
    }

    var isSandboxedWithoutNetworkClient: Bool {
        Self.isTrue(entitlement("com.apple.security.app-sandbox")) && !Self.isTrue(entitlement("com.apple.security.network.client"))
    }

    private static func isTrue(_ value: Any?) -> Bool {
        (value as? Bool) ?? (value as? NSNumber)?.boolValue ?? false
    }
}
