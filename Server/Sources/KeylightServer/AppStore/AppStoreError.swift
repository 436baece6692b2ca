/// Why signed App Store data was refused: each a 422 with its own code, changing nothing.
extension APIError {
    /// Not a JWS, not ES256, or the signature does not verify with the leaf certificate's key.
    static func appStoreSignatureInvalid(_ why: String) -> Self {
        Self(status: .unprocessableContent, code: "APPSTORE_SIGNATURE_INVALID", message: "The App Store signature is not valid: \(why).")
    }
    /// The `x5c` chain does not lead to a trusted root, lacks Apple's marker extensions, or a
    /// certificate was not valid at the data's `signedDate`.
    static func appStoreChainUntrusted(_ why: String) -> Self {
        Self(status: .unprocessableContent, code: "APPSTORE_CHAIN_UNTRUSTED", message: "The App Store certificate chain is not trusted: \(why).")
    }
    static let appStoreBundleMismatch = Self(
        status: .unprocessableContent, code: "APPSTORE_BUNDLE_MISMATCH", message: "The transaction is for another app (bundleId is not this product's appstore_bundle_id)."
    )
    static let appStoreProductUnmapped = Self(
        status: .unprocessableContent, code: "APPSTORE_PRODUCT_UNMAPPED", message: "No key type of this product has the transaction's productId as its appstore_product_id."
    )
    static let appStoreEnvironmentRefused = Self(
        status: .unprocessableContent, code: "APPSTORE_ENVIRONMENT_REFUSED", message: "Transactions from this App Store environment are not accepted for this product (appstore_environments)."
    )
    static let appStoreTransactionRevoked = Self(
        status: .unprocessableContent, code: "APPSTORE_TRANSACTION_REVOKED", message: "Apple revoked this transaction (refunded or removed from Family Sharing)."
    )
    static let appStoreTransactionExpired = Self(
        status: .unprocessableContent, code: "APPSTORE_TRANSACTION_EXPIRED", message: "The subscription this transaction bought has expired."
    )
}
