// What .ci/quickstart runs after the SDK's quick-start block in GettingStarted.md (compiled as main.swift): the
// key the block activates, and the checks that the app really was licensed, validated and freed.
import Foundation
#if canImport(KeylightSDK)
import KeylightSDK
#else
import Keylight
#endif

/// The key the customer typed in the app's activation window (here: the license CI minted).
let keyFromYourActivationWindow = ProcessInfo.processInfo.environment["QUICKSTART_LICENSE_KEY"] ?? ""

@MainActor
enum QuickStartChecks {
    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("quickstart: \(message)\n".utf8))
        exit(1)
    }

    /// Phase `activate`: the block activated; the license validates. Phase `relaunch`: a second
    /// launch is licensed from the kept lease, then gives its seat back.
    static func run(_ license: LicenseManager) async throws {
        guard license.isResolved else { fail("not resolved after checkOnLaunch") }
        guard license.state == .licensed else { fail("state is \(license.state) (\(license.reason)), last error \(String(describing: license.lastError))") }
        switch ProcessInfo.processInfo.environment["QUICKSTART_PHASE"] {
        case "activate":
            guard license.instanceId != nil else { fail("no instance after activation") }
            await license.refreshIfNeeded(force: true)  // validate
            guard license.state == .licensed, license.lastError == nil else {
                fail("validate left \(license.state), error \(String(describing: license.lastError))")
            }
            print("quickstart: activated and validated, instance \(license.instanceId ?? "")")
        case "relaunch":
            try await license.deactivate()
            guard license.state != .licensed, license.instanceId == nil else { fail("still licensed after deactivate") }
            print("quickstart: relaunched licensed from the kept lease, then deactivated (now \(license.state))")
        default:
            fail("QUICKSTART_PHASE must be activate or relaunch")
        }
    }
}
