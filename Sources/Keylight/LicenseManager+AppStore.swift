import Foundation
import KeylightCore
#if canImport(StoreKit)
import StoreKit
#endif

extension LicenseManager {
    /// The license key on this device, if one is activated: typed by the customer, or the one an
    /// App Store purchase was exchanged for (to show as "Your license key for other platforms").
    public var licenseKey: String? { stored.licenseKey }

    /// Exchanges an App Store purchase for this product's license and activates it on this
    /// device: `jws` is a StoreKit 2 transaction's `jwsRepresentation`. The server verifies it
    /// against Apple's root, mints the purchase's license once, and answers as `activate` does,
    /// with the license's key too: it is kept, and is ``licenseKey``, so the app can show it
    /// ("Your license key for other platforms"). Any failure leaves the state as it was; the
    /// server's refusals (`APPSTORE_…` codes) are thrown as ``KeylightError``.
    public func activate(appStoreTransaction jws: String) async throws {
        try await requireReadableStore()
        let machine = try await machineHash()
        let exchange = await client.activate(appStoreTransaction: jws, instanceName: configuration.instanceName, machineHash: machine)
        record(exchange.verification)
        let now = configuration.clock.unixSeconds
        switch exchange.reply {
        case .success(let body):
            guard let key = try? typedKey(body.license_key), isAcceptable(body.lease, instanceId: body.instance_id, key: key, now: now) else {
                lastError = .untrustedLease
                throw KeylightError.untrustedLease
            }
            keepDetails(body)
            adopt(body.lease, instanceId: body.instance_id, key: key, verification: exchange.verification.storedName,
                  heartbeat: body.heartbeat_seconds, overLimit: body.over_limit, licenseExpiresAt: body.license_expires_at, now: now)
            await flushWrites()
        case .rejected(let error), .transient(let error, _):
            lastError = error
            throw error
        }
    }

    #if canImport(StoreKit)
    /// Walks `Transaction.currentEntitlements` and exchanges the first verified one the server maps
    /// to this product's license (others, such as add-ons, are passed over). Throws
    /// ``KeylightError/noAppStorePurchase`` when there is none.
    @available(macOS 12, iOS 15, tvOS 15, watchOS 8, visionOS 1, *)
    public func activateFromAppStore() async throws {
        var unmapped: KeylightError?
        for await result in Transaction.currentEntitlements {
            guard case .verified = result else { continue }
            do {
                try await activate(appStoreTransaction: result.jwsRepresentation)
                return
            } catch let error as KeylightError where error.code == "APPSTORE_PRODUCT_UNMAPPED" {
                // Another in-app purchase (a tip, an add-on) is no license: try the next one.
                unmapped = error
            }
        }
        throw unmapped ?? KeylightError.noAppStorePurchase
    }
    #endif
}
