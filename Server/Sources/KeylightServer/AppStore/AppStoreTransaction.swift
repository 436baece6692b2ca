/// The fields of a verified StoreKit 2 transaction (JWSTransactionDecodedPayload) Keylight reads.
struct AppStoreTransaction: Sendable, Equatable {
    var originalTransactionId: String
    var transactionId: String
    var bundleId: String
    var productId: String
    /// `Production` or `Sandbox` (also `Xcode`, `LocalTesting`, which are never signed by Apple).
    var environment: String
    /// Unix seconds (Apple sends milliseconds).
    var signedDate: Int64
    /// A subscription's end of the period paid for; nil for one-time purchases.
    var expiresDate: Int64?
    /// Set when Apple refunded or revoked the transaction.
    var revocationDate: Int64?

    init?(_ json: EventJSON) {
        guard let original = json["originalTransactionId"].stringId, let transaction = json["transactionId"].stringId,
              let bundle = json["bundleId"].stringId, let product = json["productId"].stringId,
              let environment = json["environment"].stringId, let signed = Self.seconds(json["signedDate"]) else { return nil }
        originalTransactionId = original
        transactionId = transaction
        bundleId = bundle
        productId = product
        self.environment = environment
        signedDate = signed
        expiresDate = Self.seconds(json["expiresDate"])
        revocationDate = Self.seconds(json["revocationDate"])
    }

    /// Apple's millisecond times as Unix seconds, within 1970…2200.
    static func seconds(_ value: EventJSON) -> Int64? {
        guard let milliseconds = value.int, milliseconds > 0, milliseconds <= 7_258_118_400_000 else { return nil }
        return Int64(milliseconds / 1000)
    }
}
