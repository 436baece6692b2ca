import NIOCore

/// An IPv4 or IPv6 address as 16 bytes (IPv4 as `::ffff:a.b.c.d`), so one comparison serves both.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    var high: UInt64
    var low: UInt64

    /// `::`, the key of requests that came without a socket (in-process tests).
    static let unspecified = IPAddress(high: 0, low: 0)

    /// IPv4-mapped addresses: `::ffff:0:0/96`.
    var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A textual address (`203.0.113.7`, `2001:db8::1`); nil for anything else, ports and zones included.
    init?(_ text: some StringProtocol) {
        let text = text.trimmingCharacters(in: .whitespaces)
        // inet_pton has no length limit of its own; no valid address is longer than 45 bytes.
        guard !text.isEmpty, text.utf8.count <= 45, let address = try? SocketAddress(ipAddress: text, port: 0) else { return nil }
        self.init(address)
    }

    /// The IP of a socket address; nil for Unix domain sockets.
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            // s_addr is in network byte order.
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            self.init(high: 0, low: 0xFFFF_0000_0000 | UInt64(value))
        case .v6(let v6):
            var bytes = v6.address.sin6_addr
            let (high, low) = withUnsafeBytes(of: &bytes) { raw in
                (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian, raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
            }
            self.init(high: high, low: low)
        case .unixDomainSocket:
            return nil
        }
    }

    /// The key a rate limit counts this address under: IPv4 addresses one by one, IPv6 per /64
    /// (one subscriber is routinely handed a whole /64, so per-address buckets would be free to multiply).
    var rateLimitKey: IPAddress {
        isIPv4 ? self : IPAddress(high: high, low: 0)
    }

    var description: String {
        if isIPv4 {
            let v = UInt32(truncatingIfNeeded: low)
            return "\(v >> 24).\(v >> 16 & 0xFF).\(v >> 8 & 0xFF).\(v & 0xFF)"
        }
        let groups = (0..<8).map { index -> UInt16 in
            let word = index < 4 ? high : low
            return UInt16(truncatingIfNeeded: word >> (UInt64(3 - index % 4) * 16))
        }
        return groups.map { String($0, radix: 16) }.joined(separator: ":")
    }
}

/// A network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`); a bare address is a /32 or /128.
struct IPNetwork: Hashable, Sendable {
    let address: IPAddress
    /// Prefix length over the 128-bit form (an IPv4 /8 is stored as /104).
    let prefixLength: Int

    init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard parts[1].utf8.count <= 3, let given = Int(parts[1]), (0...width).contains(given) else { return nil }
            length = given
        }
        self.prefixLength = length + (128 - width)
        self.address = Self.masked(address, prefixLength: prefixLength)
    }

    func contains(_ candidate: IPAddress) -> Bool {
        Self.masked(candidate, prefixLength: prefixLength) == address
    }

    private static func masked(_ address: IPAddress, prefixLength: Int) -> IPAddress {
        func mask(_ bits: Int) -> UInt64 { bits <= 0 ? 0 : bits >= 64 ? .max : ~(UInt64.max >> UInt64(bits)) }
        return IPAddress(high: address.high & mask(prefixLength), low: address.low & mask(prefixLength - 64))
    }
}
