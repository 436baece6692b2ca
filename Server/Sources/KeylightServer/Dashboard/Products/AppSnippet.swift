import KeylightCore

/// What an app developer pastes for a product (SDK 2): the Info.plist entries the SDK reads, the
/// Swift that reads them, and the same values in code. Plain text: the template HTML-escapes it.
struct AppSnippet: Sendable {
    /// `<key>Keylight…</key>` entries with their values, for the `<dict>` of the app's Info.plist.
    var infoPlist: String
    /// `LicenseManager(bundle: .main)`.
    var swift: String
    /// The SwiftUI gating: neither paywall nor content until the stored license is read.
    var swiftUI: String
    /// `Configuration(serverURL:tenant:product:sdkKey:publicKeys:keyPrefix:trialDays:freeTier:)`: no Info.plist entries.
    var inCode: String

    /// The server keeps only the SDK key's hash and has no way to rotate it.
    static let sdkKeyPlaceholder = "kl_sdk_… (shown once, when the product was created)"

    init(product: Product, sdkKey: String?, serverURL: String, keys: KeyRing.TenantKeys?) {
        let sdkKey = sdkKey ?? Self.sdkKeyPlaceholder
        let published = Self.publicKeys(keys)
        let keyLines = published.map { key in
            "\t<string>\(Self.xml(key.publicKey))</string>" + (key.note.map { " <!-- \($0) -->" } ?? "")
        }
        infoPlist = """
        <key>KeylightServerURL</key>
        <string>\(Self.xml(serverURL))</string>
        <key>KeylightTenant</key>
        <string>\(Self.xml(product.tenantId))</string>
        <key>KeylightProduct</key>
        <string>\(Self.xml(product.id))</string>
        <key>KeylightSDKKey</key>
        <string>\(Self.xml(sdkKey))</string>
        <key>KeylightPublicKeys</key>
        <array>
        \((keyLines.isEmpty ? ["\t<!-- no signing key yet: reload this page -->"] : keyLines).joined(separator: "\n"))
        </array>
        <key>KeylightKeyPrefix</key>
        <string>\(Self.xml(product.keyPrefix))</string>
        <key>KeylightTrialDays</key>
        <integer>\(product.trialDurationDays)</integer>
        <key>KeylightFreeTier</key>
        \(product.freeTierEnabled ? "<true/>" : "<false/>")
        """
        swift = """
        import Keylight

        // Reads the Info.plist entries above; a wrong entry throws KeylightError (.configuration) naming it.
        let license = try LicenseManager(bundle: .main)
        """
        swiftUI = """
        import Keylight
        import SwiftUI

        @main
        struct MyApp: App {
            @StateObject private var license = try! LicenseManager(bundle: .main)
            var body: some Scene {
                WindowGroup {
                    Group {
                        if !license.isResolved { Color.clear }
                        else if license.isEntitled { ContentView() }
                        else { PaywallView() }
                    }
                    .environmentObject(license)
                    .task { await license.checkOnLaunch() }
                }
            }
        }
        """
        let codeKeys = published.map { key in
            "        \(Self.swiftLiteral(key.publicKey)),  // \(key.kid)" + (key.note.map { ", \($0)" } ?? "")
        }
        inCode = """
        import Keylight

        let configuration = try Configuration(
            serverURL: URL(string: \(Self.swiftLiteral(serverURL)))!,
            tenant: \(Self.swiftLiteral(product.tenantId)), product: \(Self.swiftLiteral(product.id)),
            sdkKey: \(Self.swiftLiteral(sdkKey)),
            publicKeys: [
        \(codeKeys.joined(separator: "\n"))
            ],
            keyPrefix: \(Self.swiftLiteral(product.keyPrefix)),
            trialDays: \(product.trialDurationDays), freeTier: \(product.freeTierEnabled)
        )
        let license = LicenseManager(configuration: configuration)
        """
    }

    /// What an app build trusts: the tenant's active key, then its prepared `next` one (so the
    /// build keeps working after the next rotation). The SDK derives each kid from the key.
    static func publicKeys(_ keys: KeyRing.TenantKeys?) -> [(kid: String, publicKey: String, note: String?)] {
        let rows = keys?.rows ?? []
        let active = rows.filter { $0.status == .active }.map { (kid: $0.kid, publicKey: $0.publicKey, note: String?.none) }
        let next = rows.filter { $0.status == .next }.map { (kid: $0.kid, publicKey: $0.publicKey, note: String?.some("next: signs after the next rotation")) }
        return active + next
    }

    /// Every published key of the tenant, the prepared `next` one included, as the Info.plist's
    /// `KeylightPublicKeys` (the signing-keys page). Grace keys stay while leases they signed live.
    static func publicKeysPlist(_ keys: KeyRing.TenantKeys?) -> String {
        let entries = (keys?.rows ?? []).filter { $0.status != .retired }.map {
            let note = switch $0.status {
            case .next: " <!-- next: signs after the next rotation -->"
            case .grace: " <!-- grace: signed before the last rotation -->"
            default: ""
            }
            return "\t<string>\(xml($0.publicKey))</string>\(note)"
        }
        return (["<key>KeylightPublicKeys</key>", "<array>"] + entries + ["</array>"]).joined(separator: "\n")
    }

    /// Text for a plist `<string>` (XML character data; the chart's escaping serves XML too).
    static func xml(_ text: String) -> String {
        SVGChart.escape(text)
    }

    /// A Swift string literal (the server URL may come from the request's Host header).
    static func swiftLiteral(_ text: String) -> String {
        var out = "\""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.append(character)
            }
        }
        return out + "\""
    }
}
