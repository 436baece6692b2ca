/// What the portal's template shows. Never the full license key: only its masked form.
struct PortalView: Sendable {
    var title: String
    var productName: String
    /// `/portal/<tenant>/<product>`: every form posts below it.
    var base: String
    var csrf: String
    var notice: String?
    var problem: String?
    var license: LicenseSummary?
    /// False on the not-found page: no form to offer.
    var available = true

    struct LicenseSummary: Sendable {
        var maskedKey: String
        var status: String
        var expires: String
        var inUse: Int
        var limit: Int
        var devices: [DeviceRow]
        /// Every slot in use. Stored, not computed: the template engine reads stored properties only.
        var full = false
    }

    struct DeviceRow: Sendable {
        var id: String
        var name: String
        var activated: String
        var lastSeen: String
        var offline: Bool
    }
}
