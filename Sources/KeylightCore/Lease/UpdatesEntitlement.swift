/// The signed "updates until" date of a license, carried in a v3 lease as the entitlement code
/// `updates-until:<unix seconds>` (decimal, no sign, no leading zeros).
///
/// An entitlement code, not a new lease field: the v3 payload has no room for one, and every
/// client that verifies v3 leases (this SDK's older releases, the hosted service's SDKs) already
/// signs over the entitlement list, sorts it, and ignores codes it does not know. Older clients
/// therefore keep verifying these leases and simply do not apply the bound; newer ones read the
/// date from the signed list, so it cannot be changed without breaking the signature.
/// The server reserves the prefix: no key type can grant such a code by hand.
public enum UpdatesEntitlement {
    public static let prefix = "updates-until:"

    /// The code for `until` (Unix seconds, at least 0).
    public static func code(until: Int64) -> String {
        prefix + String(max(until, 0))
    }

    /// The date in `code`, or nil when `code` is not a well-formed updates code. Strict, so one
    /// date has exactly one spelling: digits only, no leading zeros, at most 2^40.
    public static func date(in code: String) -> Int64? {
        guard code.hasPrefix(prefix) else { return nil }
        let digits = code.utf8.dropFirst(prefix.utf8.count)
        guard (1...13).contains(digits.count), digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              digits.count == 1 || digits.first != UInt8(ascii: "0"),
              let value = Int64(Substring(digits)), value <= 1 << 40 else { return nil }
        return value
    }

    /// The bound a lease's entitlements carry: the earliest well-formed date (a server writes one;
    /// if a list ever held several, the stricter one holds). nil = no bound.
    public static func date(in entitlements: [String]) -> Int64? {
        entitlements.compactMap(date(in:)).min()
    }

    /// The entitlements an app checks against, without the updates code(s).
    public static func removing(from entitlements: [String]) -> [String] {
        entitlements.filter { !$0.hasPrefix(prefix) }
    }
}
