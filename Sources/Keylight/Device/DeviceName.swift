import Foundation
#if os(macOS)
import SystemConfiguration
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The name a device registers under by default, shown in the customer's and the seller's seat
/// lists. Read from local settings only, never from the network: `ProcessInfo.hostName` is a
/// reverse-DNS lookup that can stall a launch for seconds, and it can carry the user's name.
public enum DeviceName {
    /// This device's default name: on macOS the computer name as System Settings shows it; on
    /// iPhone, iPad, Apple TV, Apple Watch and Vision Pro the model ("iPhone (iPhone16,1)");
    /// elsewhere the host name as the system keeps it (`gethostname`, no lookup).
    public static var current: String {
        name(computerName: computerName, modelIdentifier: modelIdentifier, hostName: hostName)
    }

    /// The decision, from plain values (tests run every branch on any platform).
    static func name(computerName: String?, modelIdentifier: String?, hostName: String?) -> String {
        if let computerName = cleaned(computerName) { return computerName }
        if let identifier = cleaned(modelIdentifier) {
            let families = [("iPhone", "iPhone"), ("iPad", "iPad"), ("iPod", "iPod touch"), ("AppleTV", "Apple TV"),
                            ("Watch", "Apple Watch"), ("RealityDevice", "Apple Vision Pro"),
                            ("iMac", "iMac"), ("Mac", "Mac")]
            if let family = families.first(where: { identifier.hasPrefix($0.0) }) {
                return "\(family.1) (\(identifier))"
            }
            return identifier
        }
        return cleaned(hostName) ?? "This device"
    }

    /// At most 64 characters of printable text, or nil.
    static func cleaned(_ text: String?) -> String? {
        text?.displayText(limit: 64)
    }

    /// macOS's computer name (System Settings › General › Sharing), from the local configuration store.
    static var computerName: String? {
        #if os(macOS)
        SCDynamicStoreCopyComputerName(nil, nil) as String?
        #else
        nil
        #endif
    }

    /// The hardware model of an iPhone, iPad, Apple TV, Apple Watch or Vision Pro (`iPhone16,1`);
    /// in the Simulator, the simulated device's. nil on macOS and Linux.
    static var modelIdentifier: String? {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        if let simulated = ProcessInfo.processInfo.environment["SIMULATOR_MODEL_IDENTIFIER"] { return simulated }
        // On a Mac running an iPad app (Mac Catalyst) hw.machine is the CPU; hw.model is the Mac's.
        #if targetEnvironment(macCatalyst)
        let name = "hw.model"
        #else
        let name = "hw.machine"
        #endif
        var size = 0
        guard sysctlbyname(name, nil, &size, nil, 0) == 0, size > 1 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        guard sysctlbyname(name, &bytes, &size, nil, 0) == 0 else { return nil }
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        #else
        nil
        #endif
    }

    /// The host name as the system keeps it, without a lookup.
    static var hostName: String? {
        var bytes = [CChar](repeating: 0, count: 256)
        guard gethostname(&bytes, bytes.count - 1) == 0 else { return nil }
        return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
