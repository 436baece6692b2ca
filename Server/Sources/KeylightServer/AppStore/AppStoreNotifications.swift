import Foundation
import Hummingbird
import KeylightCore
import SQLKit

/// `POST /appstore/notifications/{tenant}`: App Store Server Notifications V2. The
/// `signedPayload` and its `signedTransactionInfo` are verified as an exchange's transaction is;
/// each notification (`notificationUUID`) is applied once per tenant, audited:
/// - `REFUND`, `REVOKE`: the purchase's license is revoked (a purchase not yet exchanged is
///   remembered: its exchange is then refused);
/// - `DID_RENEW`, `SUBSCRIBED`: its expiry moves forward to the transaction's `expiresDate`;
/// - `EXPIRED`, `GRACE_PERIOD_EXPIRED`: it lapses (fallback access applies as for any license),
///   unless a later period was paid for; a later payment reopens it (Apple keeps the id);
/// - `REFUND_REVERSED`: what the refund revoked is reinstated.
/// Anything else, or an app no product of the tenant sells, is `ignored`.
struct AppStoreNotificationRoutes {
    let admin: AdminService
    let verifier: AppStoreSignedData

    struct Body: Decodable { var signedPayload: String? }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.post("/appstore/notifications/:tenant") { request, context in
            let tenantId = context.parameters.get("tenant") ?? ""
            guard try await admin.tenant(id: tenantId) != nil else { throw APIError.notFound("Tenant") }
            var request = request
            let bytes = try await request.collectJSONBody(limit: AppStoreSignedData.maxBytes * 2)
            let body = try decodeBody(Body.self, from: bytes.readableBytesView)
            let signed = try Field.required(body.signedPayload, "signedPayload", max: AppStoreSignedData.maxBytes)
            let outcome = try await receive(signed, tenantId: tenantId)
            return try JSONBody.response(Received(outcome: outcome))
        }
    }

    func receive(_ signed: String, tenantId: String) async throws -> String {
        let payload = try await verifier.verify(signed)
        guard let uuid = payload["notificationUUID"].stringId, let type = payload["notificationType"].stringId else {
            throw APIError.appStoreSignatureInvalid("the payload is not a notification")
        }
        let data = payload["data"]
        let now = admin.clock.unixSeconds
        let products = try await admin.products(tenantId: tenantId).filter { $0.appStoreBundleId != nil && $0.appStoreBundleId == data["bundleId"].stringId }
        guard let environment = data["environment"].stringId, !products.isEmpty else {
            return try await admin.ignoreAppStoreNotification(uuid: uuid, type: type, tenantId: tenantId, reason: "no product sells this app", now: now)
        }
        // Any of the app's products that accepts the environment takes it.
        guard let product = products.first(where: { $0.acceptedAppStoreEnvironments.contains(environment) }), let bundle = product.appStoreBundleId else {
            throw APIError.appStoreEnvironmentRefused
        }
        guard let signedTransaction = data["signedTransactionInfo"].string else {
            return try await admin.ignoreAppStoreNotification(uuid: uuid, type: type, tenantId: tenantId, reason: "no signedTransactionInfo", now: now)
        }
        let transactionPayload = try await verifier.verify(signedTransaction)
        guard let transaction = AppStoreTransaction(transactionPayload), transaction.bundleId == bundle else {
            throw APIError.appStoreSignatureInvalid("signedTransactionInfo is not this app's transaction")
        }
        let subtype = payload["subtype"].stringId
        return try await admin.applyAppStoreNotification(
            uuid: uuid, type: type, subtype: subtype, tenantId: tenantId, transaction: transaction, now: admin.clock.unixSeconds
        )
    }
}
