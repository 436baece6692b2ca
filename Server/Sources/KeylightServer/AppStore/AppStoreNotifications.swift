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
/// - `EXPIRED`, `GRACE_PERIOD_EXPIRED`: it lapses (fallback access applies as for any license).
/// Anything else, or an app no product of the tenant sells, is `ignored`.
struct AppStoreNotificationRoutes {
    let admin: AdminService
    let verifier: AppStoreSignedData

    struct Body: Decodable { var signedPayload: String? }

    func register(on router: some RouterMethods<KeylightRequestContext>) {
        router.post("/appstore/notifications/:tenant") { request, context in
            let tenantId = context.parameters.get("tenant") ?? ""
            guard TenantPath.isValidId(tenantId), try await admin.database.tenant(id: tenantId) != nil else { throw APIError.notFound("Tenant") }
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
        guard let bundle = data["bundleId"].stringId, let environment = data["environment"].stringId,
              let product = try await admin.database.products(tenantId: tenantId).first(where: { $0.appStoreBundleId == bundle }) else { return "ignored" }
        guard product.acceptedAppStoreEnvironments.contains(environment) else { throw APIError.appStoreEnvironmentRefused }
        guard let signedTransaction = data["signedTransactionInfo"].string else { return "ignored" }
        let transactionPayload = try await verifier.verify(signedTransaction)
        guard let transaction = AppStoreTransaction(transactionPayload), transaction.bundleId == bundle else {
            throw APIError.appStoreSignatureInvalid("signedTransactionInfo is not this app's transaction")
        }
        let subtype = payload["subtype"].stringId
        return try await admin.database.applyAppStoreNotification(
            uuid: uuid, type: type, subtype: subtype, tenantId: tenantId, transaction: transaction, now: admin.clock.unixSeconds
        )
    }
}
