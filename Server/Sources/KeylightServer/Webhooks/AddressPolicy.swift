/// Which addresses webhook deliveries may reach. Endpoint URLs are chosen by whoever holds an
/// admin token or dashboard account, so without this they could make the server call this
/// machine (its metrics, its database) or the private network it sits in.
struct AddressPolicy: Sendable {
    /// True only for development and tests (`--webhook-allow-private`).
    var allowPrivate: Bool

    static let publicOnly = AddressPolicy(allowPrivate: false)

    /// Why `address` is refused, or nil when it may be reached.
    func refusal(_ address: IPAddress) -> String? {
        allowPrivate ? nil : Self.kind(of: address)
    }

    /// The kind of non-public address this is (loopback, private, …), or nil for a public one.
    static func kind(of address: IPAddress) -> String? {
        if let (_, kind) = refusedNetworks.first(where: { $0.0.contains(address) }) { return kind }
        // Addresses that carry an IPv4 address inside are as private as the one they carry.
        if nat64.contains(address) {
            return kind(of: IPAddress(high: 0, low: 0xFFFF_0000_0000 | (address.low & 0xFFFF_FFFF)))
        }
        if sixToFour.contains(address) {
            return kind(of: IPAddress(high: 0, low: 0xFFFF_0000_0000 | ((address.high >> 16) & 0xFFFF_FFFF)))
        }
        return nil
    }

    private static let nat64 = IPNetwork("64:ff9b::/96")!
    private static let sixToFour = IPNetwork("2002::/16")!

    /// IPv4 (stored as `::ffff:a.b.c.d`) and IPv6 ranges that are not the public internet.
    private static let refusedNetworks: [(IPNetwork, String)] = [
        ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignment"), ("192.168.0.0/16", "private"), ("198.18.0.0/15", "benchmarking"),
        ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("::/96", "IPv4-compatible"), ("100::/64", "discard-only"),
        ("fe80::/10", "link-local"), ("fec0::/10", "site-local"), ("fc00::/7", "unique-local"), ("ff00::/8", "multicast"),
    ].map { (IPNetwork($0.0)!, $0.1) }
}
