/// A product's update settings (issue 51): whether its feed is public, and the Sparkle key its
/// builds are signed with.
struct ProductUpdateSettings: Codable, Sendable, Hashable {
    var tenantId: String
    var productId: String
    /// Without a lease the feed and its downloads answer 401, unless this is on.
    var publicFeed: Bool
    /// Base64 of the Ed25519 public key the app ships as `SUPublicEDKey`.
    var sparklePublicKey: String
    /// The server's private key, sealed; nil when the developer set their own public key.
    var sparklePrivateKeySealed: String?
    var updatedAt: Int64

    /// Whether the server signs uploads itself (it holds the private key).
    var serverSigns: Bool { sparklePrivateKeySealed != nil }

    enum CodingKeys: String, CodingKey {
        case tenantId = "tenant_id", productId = "product_id", publicFeed = "public_feed", sparklePublicKey = "sparkle_public_key"
        case sparklePrivateKeySealed = "sparkle_private_key_sealed", updatedAt = "updated_at"
    }

    static func sealContext(tenantId: String, productId: String) -> String { "keylight.sparkle_key.\(tenantId).\(productId)" }
}
