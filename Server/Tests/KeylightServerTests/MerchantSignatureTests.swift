import Foundation
import KeylightCore
import KeylightSigning
@testable import KeylightServer
import Testing

/// The three providers' signature schemes against answers their own code gives: paddle-python-sdk's
/// unit-test vector and a body Paddle itself signed (its SDK's fixture), Lemon Squeezy's HMAC as
/// its Laravel and Next.js references compute it, and Standard Webhooks' published vector plus a
/// Polar legacy-key signature made with `standardwebhooks` 1.1.0 (docs/research/merchants-of-record.md).
@Suite struct MerchantSignatureTests {
    @Test func paddleAcceptsTheSDKsVectorsAndAnyMatchingH1() {
        let secret = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh"
        let body = Array("hello-world".utf8)
        let h1 = "d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02"
        #expect(Hex.encode(PaddleSignature.sign(timestamp: 1_696_195_954, body: body, secret: secret)) == h1)
        // The SDK's own test header: a wrong h1 first, the right one second (rotation).
        #expect(PaddleSignature.isValid(header: "ts=1696195954;h1=dummy;h1=\(h1)", body: body, secret: secret, now: 1_696_195_954, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=1696195954;h1=\(h1)", body: Array("hello-worlds".utf8), secret: secret, now: 1_696_195_954, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=1696195954;h1=\(h1)", body: body, secret: secret, now: 1_696_195_954 + 301, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=1696195954;h1=\(h1)", body: body, secret: secret + "x", now: 1_696_195_954, tolerance: 300))
        // Paddle's parser trims nothing and knows only ts and h1: neither does ours.
        #expect(!PaddleSignature.isValid(header: "ts=1696195954; h1=\(h1)", body: body, secret: secret, now: 1_696_195_954, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=1696195954;h1=\(h1);v2=x", body: body, secret: secret, now: 1_696_195_954, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=1696195954;ts=1;h1=\(h1)", body: body, secret: secret, now: 1_696_195_954, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: "ts=9223372036854775807;h1=\(h1)", body: body, secret: secret, now: -9_000_000_000_000_000_000, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: nil, body: body, secret: secret, now: 0, tolerance: 300))
        #expect(!PaddleSignature.isValid(header: String(repeating: "h1=0;", count: 2_000), body: body, secret: secret, now: 0, tolerance: 300))
    }

    @Test func paddleAcceptsABodyPaddleSigned() {
        let body = #"{"data":{"id":"ctm_01hs0tqf76sxmp7ba5e4mw1sc8","name":"John Doe","email":"blackhole+verification2@paddle.com","locale":"en","status":"active","created_at":"2024-03-15T10:32:37.862Z","updated_at":"2024-03-15T10:32:37.862Z","custom_data":null,"import_meta":null,"marketing_consent":false},"event_id":"evt_01hs0tqfme2xwb2hvwv87p8y3w","event_type":"customer.created","occurred_at":"2024-03-15T10:32:38.286848Z","notification_id":"ntf_01hs0tqfrhgkyp39x4wyvy7h6n"}"#
        let secret = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_GrOWLNef+vmtjJYq4mSnHNzvc8uWoJ1I"
        let header = "ts=1710498758;h1=558bf93944dbeb4790c7a8af6cb2ea435c8ca9c8396aafc1a4e37424ac132744"
        #expect(PaddleSignature.isValid(header: header, body: Array(body.utf8), secret: secret, now: 1_710_498_758, tolerance: 300))
        // And it reads as the customer's address.
        let event = PaddleEvent.read(EventJSON.parse(Array(body.utf8))!)
        #expect(event?.id == "evt_01hs0tqfme2xwb2hvwv87p8y3w")
        #expect(event?.action == .customer(id: "ctm_01hs0tqf76sxmp7ba5e4mw1sc8", email: "blackhole+verification2@paddle.com"))
    }

    @Test func lemonSqueezyIsTheHexHMACOfTheRawBody() {
        let body = Array(#"{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1"}}"#.utf8)
        let expected = "85541d820874b6212919b229c4d09f6820173a37adf45e02fcc4cb7767b0ba85"
        #expect(LemonSqueezySignature.signature(body: body, secret: "ls_test_signing_secret") == expected)
        #expect(LemonSqueezySignature.isValid(header: expected, body: body, secret: "ls_test_signing_secret"))
        #expect(LemonSqueezySignature.isValid(header: expected.uppercased(), body: body, secret: "ls_test_signing_secret"))
        #expect(!LemonSqueezySignature.isValid(header: expected, body: body + [0x20], secret: "ls_test_signing_secret"))
        #expect(!LemonSqueezySignature.isValid(header: String(expected.dropLast()), body: body, secret: "ls_test_signing_secret"))
        #expect(!LemonSqueezySignature.isValid(header: nil, body: body, secret: "ls_test_signing_secret"))
    }

    @Test func standardWebhooksTakeTheSpecsKeyAndPolarsLegacyKey() {
        // The specification library's vector: a base64 secret.
        #expect(StandardWebhookSignature.isValid(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330", signatures: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            body: Array(#"{"test": 2432232314}"#.utf8), secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", now: 1_614_265_330, tolerance: 300
        ))
        // Polar's legacy key: the UTF-8 bytes of the whole secret, `whsec_` included.
        let legacy = "whsec_polarLegacySecretExample0123456789ab"
        let body = Array(#"{"type":"order.paid"}"#.utf8)
        let signature = "v1,9z4hjoM6dv5oo1sdgS0zPe+v/oUtPK9ipY6J86evsEg="
        #expect(StandardWebhookSignature.isValid(id: "evt-1", timestamp: "1614265330", signatures: "v1,AAAA " + signature, body: body, secret: legacy, now: 1_614_265_330, tolerance: 300))
        #expect(!StandardWebhookSignature.isValid(id: "evt-2", timestamp: "1614265330", signatures: signature, body: body, secret: legacy, now: 1_614_265_330, tolerance: 300))
        #expect(!StandardWebhookSignature.isValid(id: "evt-1", timestamp: "1614265330", signatures: signature, body: body, secret: legacy, now: 1_614_265_330 + 301, tolerance: 300))
        #expect(!StandardWebhookSignature.isValid(id: "evt-1", timestamp: "1614265330", signatures: "v2," + signature.dropFirst(3), body: body, secret: legacy, now: 1_614_265_330, tolerance: 300))
        #expect(!StandardWebhookSignature.isValid(id: nil, timestamp: "1614265330", signatures: signature, body: body, secret: legacy, now: 1_614_265_330, tolerance: 300))
        #expect(!StandardWebhookSignature.isValid(id: "evt-1", timestamp: "1614265330.5", signatures: signature, body: body, secret: legacy, now: 1_614_265_330, tolerance: 300))
    }

    @Test func timesAreReadAsProvidersWriteThem() {
        #expect(EventJSON.unixSeconds(rfc3339: "1970-01-01T00:00:00Z") == 0)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-04-12T10:18:49.621022Z") == 1_712_917_129)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-02-24T12:43:48.000000Z") == 1_708_778_628)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-04-12T12:18:49+02:00") == 1_712_917_129)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-04-12 10:18:49Z") == nil)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-13-12T10:18:49Z") == nil)
        #expect(EventJSON.unixSeconds(rfc3339: "9999-04-12T10:18:49Z") == nil)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-04-12T10:18:49.Z") == nil)
        #expect(EventJSON.unixSeconds(rfc3339: "2024-04-12T10:18:49") == nil)
    }
}

/// How Paddle's adjustments read: full only when Paddle says so.
@Suite struct PaddleAdjustmentTests {
    static func adjustment(_ json: String) -> MerchantAction? {
        let body = #"{"event_id":"evt_1","event_type":"adjustment.updated","data":\#(json)}"#
        return PaddleEvent.read(EventJSON.parse(Array(body.utf8))!)?.action
    }

    @Test func onlyAFullRefundOrAChargebackTakesEverything() {
        // The SDK's own fixture: no adjustment type, one partial item.
        #expect(Self.adjustment(#"{"action":"refund","status":"approved","type":null,"transaction_id":"txn_1","items":[{"type":"partial","amount":"100"}]}"#)
            == .refund(orderId: "txn_1", full: false, reason: "paddle refund"))
        #expect(Self.adjustment(#"{"action":"refund","status":"approved","type":"full","transaction_id":"txn_1","items":[]}"#)
            == .refund(orderId: "txn_1", full: true, reason: "paddle refund"))
        #expect(Self.adjustment(#"{"action":"refund","status":"approved","transaction_id":"txn_1","items":[{"type":"full"},{"type":"full"}]}"#)
            == .refund(orderId: "txn_1", full: true, reason: "paddle refund"))
        #expect(Self.adjustment(#"{"action":"chargeback","status":"approved","type":null,"transaction_id":"txn_1","items":[{"type":"partial"}]}"#)
            == .refund(orderId: "txn_1", full: true, reason: "paddle chargeback"))
        #expect(Self.adjustment(#"{"action":"refund","status":"pending_approval","type":"full","transaction_id":"txn_1"}"#) == .ignored(.ignored))
        #expect(Self.adjustment(#"{"action":"credit","status":"approved","type":"full","transaction_id":"txn_1"}"#) == .ignored(.ignored))
    }
}
