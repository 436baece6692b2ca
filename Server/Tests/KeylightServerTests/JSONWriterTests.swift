import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

@Suite(.timeLimit(.minutes(6))) struct JSONWriterTests {
    @Test func escapesWhatJSONRequires() throws {
        let tricky = "quote\" backslash\\ newline\n tab\t bell\u{07} nul\u{0} é 日本 🎉 </script>"
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("s"); writer.string(tricky)
        writer.key("n"); writer.integer(Int64.min)
        writer.key("z"); writer.integer(nil)
        writer.key("b"); writer.bool(false)
        writer.key("a"); writer.strings(["x", "y\"z", ""])
        writer.key("o"); writer.beginObject(); writer.key("inner"); writer.bool(true); writer.endObject()
        writer.key("e"); writer.strings([])
        writer.endObject()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any])
        #expect(object["s"] as? String == tricky)
        #expect((object["n"] as? NSNumber)?.int64Value == Int64.min)
        #expect(object["z"] is NSNull)
        #expect(object["b"] as? Bool == false)
        #expect(object["a"] as? [String] == ["x", "y\"z", ""])
        #expect((object["o"] as? [String: Bool]) == ["inner": true])
        #expect((object["e"] as? [String])?.isEmpty == true)
    }

    @Test func stringsWithoutEscapesAreCopiedAsTheyAre() throws {
        // The fast path copies a string whole; one escapable byte anywhere takes the slow path.
        var writer = JSONWriter()
        writer.strings(["abc+/=", "é日本", "", "tail\"", "\u{1F}head"])
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"["abc+/=","é日本","","tail\"","\u001fhead"]"#)
    }

    @Test func leaseRoundTripsThroughTheProtocolParser() throws {
        let key = try SigningKey.generate(kid: "k1")
        let lease = try Lease.sign(licenseKeyHash: String(repeating: "a", count: 64), instanceId: "i-1", issuedAt: 1, expiresAt: 2,
                                   status: .active, entitlements: ["pro", "beta"], with: key)
        let config = ProductConfig(tenantId: "t", productId: "p", trialDurationDays: 14, freeTierEnabled: true, issuedAt: 1, expiresAt: 9).signed(with: key)
        let body = ValidateResponse(
            valid: true, licenseExpiresAt: nil, lease: lease, config: config, summary: LicenseSummary(customerEmail: nil, keyTypeName: "Pro \"Team\"")
        ).jsonBytes
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        // The six cfg1 fields also at the top level (protocol 6.7), and the license pane's two (6.9).
        #expect(object.keys.sorted() == [
            "config", "customer_email", "expires_at", "free_tier_enabled", "issued_at", "key_type_name", "kid", "lease", "license_expires_at", "signature",
            "trial_duration_days", "valid",
        ])
        #expect(object["customer_email"] is NSNull && object["key_type_name"] as? String == "Pro \"Team\"")
        #expect(object["signature"] as? String == config.signature && object["kid"] as? String == "k1" && object["trial_duration_days"] as? Int == 14)
        #expect(object["license_expires_at"] is NSNull)
        let leaseData = try JSONSerialization.data(withJSONObject: try #require(object["lease"]))
        #expect(try Lease(json: leaseData) == lease)
        let configData = try JSONSerialization.data(withJSONObject: try #require(object["config"]))
        #expect(try JSONDecoder().decode(SignedProductConfig.self, from: configData) == config)
    }
}
