import Foundation
import KeylightCore

// What a license window shows about the license, and the calls behind its buttons: buy or upgrade,
// then see the new license; and "lost your key?".
extension LicenseManager {
    /// The license key as a person may be shown it (`ACME-····-····-····-7B2D`); nil without a license.
    public var maskedLicenseKey: String? {
        guard let text = stored.licenseKey, let key = try? LicenseKey(text) else { return nil }
        return configuration.keyPrefix.isEmpty ? key.masked : key.masked(keepingPrefix: configuration.keyPrefix)
    }

    /// The address the license was bought with, as the server last said (nil: none, or an older server).
    public var customerEmail: String? { stored.licenseKey == nil ? nil : stored.customerEmail }

    /// The license's kind, as the seller names it ("Pro", "Team"), as the server last said.
    public var keyTypeName: String? { stored.licenseKey == nil ? nil : stored.keyTypeName }

    /// Where this license can be upgraded or renewed: the page the server names for it; else the
    /// product's purchase page (``BrandingConfig/purchaseURL``), the developer's own choice; else,
    /// with a license, the server's upgrade page for it (`/t/<tenant>/license/<KEY>/upgrade`, which
    /// the hosted clients open too: the server trades the key for a session and shows the buyer's
    /// account with its upgrade, renewal and seat prices). nil when there is none of these.
    public var upgradeURL: URL? {
        if stored.licenseKey != nil, let text = stored.upgradeURL, let url = URL(string: text),
           let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" {
            return url
        }
        if let purchase = configuration.branding?.purchaseURL { return purchase }
        return stored.licenseKey.flatMap { Self.upgradePage(server: configuration.serverURL, tenantId: configuration.tenantId, licenseKey: $0) }
    }

    /// `<server>/t/<tenant>/license/<KEY>/upgrade`; nil when the key or tenant would need escaping
    /// (a key is `A-Z 0-9 -`, a tenant `a-z 0-9 _ -`: anything else is not one the server made).
    static func upgradePage(server: URL, tenantId: String, licenseKey: String) -> URL? {
        let safe = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F } }
        guard safe(tenantId), safe(licenseKey) else { return nil }
        var base = server.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: "\(base)/t/\(tenantId)/license/\(licenseKey)/upgrade")
    }

    /// Keeps what the server says beside the lease, within sane lengths (unsigned: display only).
    func keepDetails(_ body: some KeylightClient.LicenseDetails) {
        stored.customerEmail = body.customer_email?.displayText(limit: 320)
        stored.keyTypeName = body.key_type_name?.displayText(limit: 128)
        stored.upgradeURL = body.upgrade_url?.displayText(limit: 2_048)
    }

    /// After the user bought an upgrade or a renewal (in the browser): validates until the license
    /// changes — entitlements, expiry, status or kind — which covers the lag of the store's webhook
    /// to the server, waiting `initialDelay` seconds, then twice as long each time (at most 30 s),
    /// and giving up after `timeout` seconds. Answers whether the license changed. Without a
    /// license on this device it answers false at once (a new purchase is a new key to activate).
    @discardableResult
    public func refreshAfterUpgrade(timeout: Double = 180, initialDelay: Double = 2) async -> Bool {
        guard await ensureLoaded(), stored.licenseKey != nil else { return false }
        let before = licenseFingerprint
        let deadline = ContinuousClock.now + .seconds(max(0, timeout))
        var delay = max(0.01, initialDelay)
        while true {
            await refreshIfNeeded(force: true)
            if licenseFingerprint != before { return true }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero, !Task.isCancelled else { return false }
            try? await Task.sleep(for: min(.seconds(delay), remaining))
            if Task.isCancelled || ContinuousClock.now >= deadline {
                await refreshIfNeeded(force: true)
                return licenseFingerprint != before
            }
            delay = min(delay * 2, 30)
        }
    }

    /// What an upgrade or renewal changes.
    private var licenseFingerprint: [String] {
        let lease = stored.lease
        return [lease?.status.rawValue ?? "", (lease?.entitlements ?? []).joined(separator: ","), stored.licenseExpiresAt.map(String.init) ?? "",
                stored.keyTypeName ?? "", state.name]
    }

    /// "Lost your key?": asks the server to mail every key bought with `email` to that address. The
    /// server answers alike whether or not it knows the address, so nothing here says either.
    /// Throws on a malformed address (the server's `INVALID_REQUEST`), a rate limit, or no network.
    public func requestLostKey(email: String) async throws {
        let trimmed = email.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count <= 320, trimmed.contains("@") else {
            throw KeylightError.server(code: "INVALID_REQUEST", message: "That is not an email address.")
        }
        let exchange = await client.lostKey(email: trimmed)
        record(exchange.verification)
        switch exchange.reply {
        case .success: return
        case .rejected(let error), .transient(let error, _): throw error
        }
    }
}
