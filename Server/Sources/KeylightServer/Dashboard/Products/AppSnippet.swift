/// The Swift an app developer pastes: the SDK `Configuration` for a product, and the
/// `trustedKeys` entries an app build ships.
enum AppSnippet {
    static func configuration(product: Product, sdkKey: String?, serverURL: String, keys: KeyRing.TenantKeys?) -> String {
        """
        import Keylight

        let configuration = Configuration(
            serverURL: URL(string: "\(serverURL)")!,
            tenantId: "\(product.tenantId)", productId: "\(product.id)",
            sdkKey: "\(sdkKey ?? "kl_sdk_… (shown once when the product was created)")",
            keyPrefix: "\(product.keyPrefix)",
            trustedKeys: [
        \(trustedKeysLines(keys))
            ],
            trialDaysSeed: \(product.trialDurationDays)
        )
        let manager = LicenseManager(configuration: configuration)
        """
    }

    /// Every published key of the tenant, the prepared `next` one included, so the build keeps
    /// working after the next rotation.
    static func trustedKeysLines(_ keys: KeyRing.TenantKeys?) -> String {
        (keys?.rows ?? []).filter { $0.status != .retired }.map {
            let note = switch $0.status {
            case .next: "  // next: signs after the next rotation"
            case .grace: "  // grace: signed before the last rotation"
            default: ""
            }
            return "        \"\($0.kid)\": try .init(rawRepresentation: Data(base64Encoded: \"\($0.publicKey)\")!),\(note)"
        }.joined(separator: "\n")
    }
}
