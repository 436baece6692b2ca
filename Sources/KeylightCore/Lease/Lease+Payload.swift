extension Lease {
    /// The bytes that are signed:
    /// `v3|<kid>|<licenseKeyHash>|<instanceId>|<issuedAt>|<expiresAt>|<status>|<entitlements_csv>`,
    /// entitlements sorted ascending by UTF-8 code unit and joined with `,`.
    public var signedPayload: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + kid.utf8.count + instanceId.utf8.count + entitlements.count * 16)
        bytes.appendField("v3")
        bytes.appendField(kid)
        bytes.appendField(licenseKeyHash)
        bytes.appendField(instanceId)
        bytes.appendDecimal(issuedAt)
        bytes.append(UInt8(ascii: "|"))
        bytes.appendDecimal(expiresAt)
        bytes.append(UInt8(ascii: "|"))
        bytes.appendField(status.rawValue)
        for (index, entitlement) in Self.canonicalOrder(entitlements).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: entitlement.utf8)
        }
        return bytes
    }

    /// Entitlements in signing order: ascending by UTF-8 code unit, which for the ASCII codes
    /// the server issues is also UTF-16 and scalar order.
    package static func canonicalOrder(_ entitlements: [String]) -> [String] {
        guard entitlements.count > 1 else { return entitlements }
        return entitlements.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// True when the payload reads back unambiguously: no field holds the `|` separator and no
    /// entitlement holds `,` or is empty. Without this, `["a,b"]` and `["a","b"]` would sign
    /// the same bytes, and a lease granting one code could be rewritten to grant two.
    package var hasUnambiguousPayload: Bool {
        let pipe = UInt8(ascii: "|")
        let comma = UInt8(ascii: ",")
        guard !kid.utf8.contains(pipe), !licenseKeyHash.utf8.contains(pipe), !instanceId.utf8.contains(pipe) else {
            return false
        }
        return entitlements.allSatisfy { code in !code.isEmpty && !code.utf8.contains(pipe) && !code.utf8.contains(comma) }
    }
}
