import Foundation
@testable import KeylightTrust
import KeylightTestSupport
import Testing

/// Mutated invitation links (what a camera reads off any QR code): refused with an error, never a trap.
@Suite(.timeLimit(.minutes(2))) struct InvitationFuzzTests {
    @Test func mutatedLinksAreRefusedOrParsedNeverFatal() throws {
        var mutator = Mutator(seed: Mutator.seed("invitation links"))
        let device = try TestDevice("Mac")
        let link = try device.invite().url()
        let now: Int64 = 1_800_000_000
        #expect(try Invitation.parse(link, now: now).url() == link)
        var refused = 0
        for _ in 0..<3_000 {
            let text = mutator.mutate(text: link)
            for clock in [Int64.min, now, Int64.max] {
                if (try? Invitation.parse(text, now: clock)) == nil { refused += 1 }
            }
        }
        #expect(refused > 0)
    }
}
