import Foundation
import KeylightCore

/// The stored state's own layout, read at every launch: cheaper to read than JSON (which cost
/// about a quarter of a launch besides the lease's signature check).
///
/// `K L S` and a version byte, then fields, each a one-byte tag, a length (LEB128) and that
/// many bytes: an integer is 8 bytes little-endian, a flag 1 byte, a string its UTF-8, a list
/// of strings each with its length before it, a lease or config its own fields. A reader skips
/// tags it does not know (a later SDK's additions), and refuses anything that runs past its
/// end, repeats no rule of its own, or leaves a required field out. States written as JSON by
/// earlier SDKs are still read (``PersistedState/decode(_:)``), and rewritten in this layout.
extension PersistedState {
    static let compactHeader: [UInt8] = [0x4B, 0x4C, 0x53, 0x01]

    /// Field tags. Numbers are never reused: a removed field's tag stays retired.
    private enum Tag: UInt8 {
        case licenseKey = 1, instanceId, lease, config, trialStartedAt, lastSeen, serverSeen, lastRefresh, lastAttempt,
             lastBeacon, keylessInstanceId, rejection, leaseVerification, configVerification, awaitingVerifiedLease,
             offlineActivation, pendingDeactivationProof, surrenderedInstances, floatingHeartbeat, leaseReceivedAt,
             licenseExpiresAt, customerEmail, keyTypeName, upgradeURL
    }

    private enum LeaseTag: UInt8 {
        case kid = 1, licenseKeyHash, instanceId, issuedAt, expiresAt, status, signature, entitlements
    }

    private enum ConfigTag: UInt8 {
        case trialDurationDays = 1, freeTierEnabled, issuedAt, expiresAt, kid, signature
    }

    /// The state in the compact layout.
    func compactEncoded() -> Data {
        var writer = CompactWriter(header: Self.compactHeader)
        writer.string(Tag.licenseKey.rawValue, licenseKey)
        writer.string(Tag.instanceId.rawValue, instanceId)
        if let lease { writer.nested(Tag.lease.rawValue) { Self.write(lease, to: &$0) } }
        if let config { writer.nested(Tag.config.rawValue) { Self.write(config, to: &$0) } }
        writer.integer(Tag.trialStartedAt.rawValue, trialStartedAt)
        writer.integer(Tag.lastSeen.rawValue, lastSeen)
        writer.integer(Tag.serverSeen.rawValue, serverSeen)
        writer.integer(Tag.lastRefresh.rawValue, lastRefresh)
        writer.integer(Tag.lastAttempt.rawValue, lastAttempt)
        writer.integer(Tag.lastBeacon.rawValue, lastBeacon)
        writer.string(Tag.keylessInstanceId.rawValue, keylessInstanceId)
        writer.string(Tag.rejection.rawValue, rejection)
        writer.string(Tag.leaseVerification.rawValue, leaseVerification)
        writer.string(Tag.configVerification.rawValue, configVerification)
        writer.flag(Tag.awaitingVerifiedLease.rawValue, awaitingVerifiedLease)
        writer.flag(Tag.offlineActivation.rawValue, offlineActivation)
        writer.string(Tag.pendingDeactivationProof.rawValue, pendingDeactivationProof)
        writer.strings(Tag.surrenderedInstances.rawValue, surrenderedInstances)
        writer.integer(Tag.floatingHeartbeat.rawValue, floatingHeartbeat.map(Int64.init))
        writer.integer(Tag.leaseReceivedAt.rawValue, leaseReceivedAt)
        writer.integer(Tag.licenseExpiresAt.rawValue, licenseExpiresAt)
        writer.string(Tag.customerEmail.rawValue, customerEmail)
        writer.string(Tag.keyTypeName.rawValue, keyTypeName)
        writer.string(Tag.upgradeURL.rawValue, upgradeURL)
        return Data(writer.bytes)
    }

    /// Reads a stored state in either layout; `isCompact` is false for the JSON of earlier SDKs.
    static func decode(_ data: Data) throws -> (state: PersistedState, isCompact: Bool) {
        if data.starts(with: compactHeader.prefix(3)) {
            return (try decodeCompact(data), true)
        }
        return (try JSONDecoder().decode(PersistedState.self, from: data), false)
    }

    static func decodeCompact(_ data: Data) throws -> PersistedState {
        let bytes = [UInt8](data)
        guard bytes.starts(with: compactHeader) else { throw CompactStateError.unknownVersion }
        var state = PersistedState()
        try CompactReader(bytes, from: compactHeader.count).fields { tag, field in
            switch Tag(rawValue: tag) {
            case .licenseKey: state.licenseKey = try field.string()
            case .instanceId: state.instanceId = try field.string()
            case .lease: state.lease = try readLease(field)
            case .config: state.config = try readConfig(field)
            case .trialStartedAt: state.trialStartedAt = try field.integer()
            case .lastSeen: state.lastSeen = try field.integer()
            case .serverSeen: state.serverSeen = try field.integer()
            case .lastRefresh: state.lastRefresh = try field.integer()
            case .lastAttempt: state.lastAttempt = try field.integer()
            case .lastBeacon: state.lastBeacon = try field.integer()
            case .keylessInstanceId: state.keylessInstanceId = try field.string()
            case .rejection: state.rejection = try field.string()
            case .leaseVerification: state.leaseVerification = try field.string()
            case .configVerification: state.configVerification = try field.string()
            case .awaitingVerifiedLease: state.awaitingVerifiedLease = try field.flag()
            case .offlineActivation: state.offlineActivation = try field.flag()
            case .pendingDeactivationProof: state.pendingDeactivationProof = try field.string()
            case .surrenderedInstances: state.surrenderedInstances = try field.strings()
            case .floatingHeartbeat:
                guard let heartbeat = Int(exactly: try field.integer()) else { throw CompactStateError.malformed }
                state.floatingHeartbeat = heartbeat
            case .leaseReceivedAt: state.leaseReceivedAt = try field.integer()
            case .licenseExpiresAt: state.licenseExpiresAt = try field.integer()
            case .customerEmail: state.customerEmail = try field.string()
            case .keyTypeName: state.keyTypeName = try field.string()
            case .upgradeURL: state.upgradeURL = try field.string()
            case nil: break
            }
        }
        return state
    }

    private static func write(_ lease: Lease, to writer: inout CompactWriter) {
        writer.string(LeaseTag.kid.rawValue, lease.kid)
        writer.string(LeaseTag.licenseKeyHash.rawValue, lease.licenseKeyHash)
        writer.string(LeaseTag.instanceId.rawValue, lease.instanceId)
        writer.integer(LeaseTag.issuedAt.rawValue, lease.issuedAt)
        writer.integer(LeaseTag.expiresAt.rawValue, lease.expiresAt)
        writer.string(LeaseTag.status.rawValue, lease.status.rawValue)
        writer.string(LeaseTag.signature.rawValue, lease.signature)
        writer.strings(LeaseTag.entitlements.rawValue, lease.entitlements)
    }

    private static func readLease(_ reader: CompactReader) throws -> Lease {
        var kid: String?, keyHash: String?, instanceId: String?, issuedAt: Int64?, expiresAt: Int64?
        var status: Lease.Status?, signature: String?, entitlements: [String]?
        try reader.fields { tag, field in
            switch LeaseTag(rawValue: tag) {
            case .kid: kid = try field.string()
            case .licenseKeyHash: keyHash = try field.string()
            case .instanceId: instanceId = try field.string()
            case .issuedAt: issuedAt = try field.integer()
            case .expiresAt: expiresAt = try field.integer()
            case .status:
                guard let known = Lease.Status(rawValue: try field.string()) else { throw CompactStateError.malformed }
                status = known
            case .signature: signature = try field.string()
            case .entitlements: entitlements = try field.strings()
            case nil: break
            }
        }
        guard let kid, let keyHash, let instanceId, let issuedAt, let expiresAt, let status, let signature, let entitlements else {
            throw CompactStateError.malformed
        }
        return Lease(kid: kid, licenseKeyHash: keyHash, instanceId: instanceId, issuedAt: issuedAt, expiresAt: expiresAt,
                     status: status, signature: signature, entitlements: entitlements)
    }

    private static func write(_ config: SignedProductConfig, to writer: inout CompactWriter) {
        writer.integer(ConfigTag.trialDurationDays.rawValue, Int64(config.trialDurationDays))
        writer.flag(ConfigTag.freeTierEnabled.rawValue, config.freeTierEnabled)
        writer.integer(ConfigTag.issuedAt.rawValue, config.issuedAt)
        writer.integer(ConfigTag.expiresAt.rawValue, config.expiresAt)
        writer.string(ConfigTag.kid.rawValue, config.kid)
        writer.string(ConfigTag.signature.rawValue, config.signature)
    }

    private static func readConfig(_ reader: CompactReader) throws -> SignedProductConfig {
        var days: Int?, freeTier: Bool?, issuedAt: Int64?, expiresAt: Int64?, kid: String?, signature: String?
        try reader.fields { tag, field in
            switch ConfigTag(rawValue: tag) {
            case .trialDurationDays:
                guard let value = Int(exactly: try field.integer()) else { throw CompactStateError.malformed }
                days = value
            case .freeTierEnabled: freeTier = try field.flag()
            case .issuedAt: issuedAt = try field.integer()
            case .expiresAt: expiresAt = try field.integer()
            case .kid: kid = try field.string()
            case .signature: signature = try field.string()
            case nil: break
            }
        }
        guard let days, let freeTier, let issuedAt, let expiresAt, let kid, let signature else { throw CompactStateError.malformed }
        return SignedProductConfig(trialDurationDays: days, freeTierEnabled: freeTier, issuedAt: issuedAt, expiresAt: expiresAt, kid: kid, signature: signature)
    }
}
