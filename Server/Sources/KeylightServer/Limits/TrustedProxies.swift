import HTTPTypes

/// The proxies allowed to say who the client is (`--trusted-proxies`). From them, and only from
/// them, `X-Forwarded-For` is read right to left and the first address that is not itself a
/// trusted proxy is the client: everything to its left was written by the client and proves
/// nothing. From any other peer the header is ignored.
public struct TrustedProxies: Sendable {
    let networks: [IPNetwork]

    /// No proxy trusted: the socket peer is always the client.
    public static let none = TrustedProxies(networks: [])

    init(networks: [IPNetwork]) {
        self.networks = networks
    }

    /// `CIDR[,CIDR…]`; nil when any entry is not an address or network.
    public init?(list: String) {
        var networks: [IPNetwork] = []
        for entry in list.split(separator: ",") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            guard let network = IPNetwork(trimmed) else { return nil }
            networks.append(network)
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    func trusts(_ address: IPAddress) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// Forwarded hops read at most: a longer header is a client padding it.
    static let maxHops = 32

    /// The client's address for a request from `peer` carrying `forwardedFor` (every
    /// `X-Forwarded-For` field line, in order).
    func client(peer: IPAddress?, forwardedFor: [String]) -> IPAddress? {
        guard let peer, !networks.isEmpty, trusts(peer), !forwardedFor.isEmpty else { return peer }
        var client = peer
        var hops = 0
        for line in forwardedFor.reversed() {
            for entry in line.split(separator: ",", omittingEmptySubsequences: false).reversed() {
                hops += 1
                // An unreadable entry ends the walk: the last address a trusted hop vouched for stands.
                guard hops <= Self.maxHops, let address = IPAddress(entry) else { return client }
                client = address
                if !trusts(address) { return address }
            }
        }
        return client
    }
}
