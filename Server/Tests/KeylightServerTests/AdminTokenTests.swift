@testable import KeylightServer
import Testing

/// The owner token's form (protocol 6.9): `klt_`, 40 base62 characters, and a checksum that a
/// secret scanner can check without asking the server.
@Suite struct AdminTokenTests {
    @Test func generatedTokensCarryAChecksumThatCatchesEveryOneCharacterChange() {
        let token = AdminToken.generate()
        #expect(token.hasPrefix("klt_") && token.utf8.count == 50 && AdminToken.isWellFormed(token))
        #expect(AdminToken.generate() != token)
        let characters = Array(token)
        for index in 4..<characters.count {
            var changed = characters
            changed[index] = changed[index] == "A" ? "B" : "A"
            #expect(!AdminToken.isWellFormed(String(changed)), "a change at \(index) went unnoticed")
        }
        #expect(!AdminToken.isWellFormed("kl_admin_" + token.dropFirst(4)))
        #expect(!AdminToken.isWellFormed(token + "x") && !AdminToken.isWellFormed(String(token.dropLast())))
        // CRC-32 as everyone computes it ("123456789" → cbf43926).
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }
}
