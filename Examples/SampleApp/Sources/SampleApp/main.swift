// A minimal app: decides its license state offline at launch, parses a key, and makes a pairing
// invitation, touching each product an app embeds.
import Foundation
import Keylight
import KeylightCore
import KeylightTrust

@MainActor
func run() async throws {
    // The one way in, in code (an app puts the same values in its Info.plist).
    var configuration = try Configuration(
        serverURL: URL(string: "http://127.0.0.1:9")!,  // nothing listens: the app is offline
        tenant: "acme", product: "app", sdkKey: "kl_sdk_example",
        publicKeys: ["wPOiRNiP2hbc0O4UCAuO6FRRLKp4YvGtf8V27xnPzNY="], keyPrefix: "ACME", trialDays: 14
    )
    configuration.store = InMemoryStore()
    let license = LicenseManager(configuration: configuration)
    await license.checkOnLaunch()
    await license.waitUntilIdle()
    let key = try LicenseKey.generate(prefix: "ACME")
    let identity = try DeviceIdentity.loadOrCreate(in: InMemoryStore(), name: "Sample Mac")
    var random = SystemRandomNumberGenerator()
    let invitation = Invitation(from: identity, now: Int64(Date().timeIntervalSince1970), random: &random)
    print("Keylight \(Keylight.sdkVersion): \(license.state), entitled: \(license.isEntitled), key \(key.text.prefix(5))…, invitation \(invitation.id.prefix(4))…")
    guard license.state == .trial(daysLeft: 14), license.isEntitled else { exit(1) }
}

try await run()
