import Crypto
import Foundation
@testable import KeylightCore
import KeylightSigning
import Testing

@Suite(.timeLimit(.minutes(3))) struct ResponseSignatureTests {
    static let root = try! SigningKey.generate(kid: "root1")
    static let now: Int64 = 1_781_076_246
    static let today = keylightDay(now)
    static let verifier = ResponseSignatureVerifier(keyset: Keyset(["root1": root.publicKey]))
    static let body = Array(#"{"valid":true}"#.utf8)
    static let path = "/t1/p1/validate"
    static let requestTime = "1781076246123"

    struct Signed {
        var header: String
        var nonce: ResponseNonce
        var intermediate: IntermediateSigningKey
    }

    static func sign(intermediate: IntermediateSigningKey? = nil, body: [UInt8] = body) -> Signed {
        let key = intermediate ?? IntermediateSigningKey.create(root: root, now: now, validForDays: 3)
        let nonce = ResponseNonce()
        var generator = SystemRandomNumberGenerator()
        let signature = key.sign(nonce: nonce.bytes, path: path, requestTime: requestTime, body: body, using: &generator)
        return Signed(header: signature.header, nonce: nonce, intermediate: key)
    }

    static func verify(_ header: String, kid: String = "root1", nonce: [UInt8], path: String = path, requestTime: String = requestTime, body: [UInt8] = body, now: Int64 = now) throws(ResponseSignatureError) {
        try verifier.verify(signature: header, kid: kid, requestTime: requestTime, nonce: nonce, path: path, body: body, now: now)
    }

    @Test func layoutMatchesTheProtocolTable() {
        typealias C = ResponseSignatureLayout.Component
        #expect(C.intermediatePublicKey.range == 0..<32)
        #expect(C.intermediateExpiry.range == 32..<36)
        #expect(C.rootSignature.range == 36..<100)
        #expect(C.salt.range == 100..<116)
        #expect(C.messageSignature.range == 116..<180)
        #expect(ResponseSignatureLayout.totalSize == 180)
        #expect(ResponseSignatureLayout.certificateRange == 0..<100)
    }

    @Test func blobIsLaidOutAsDocumented() throws {
        let signed = Self.sign()
        let raw = Array(try #require(Base64.decode(signed.header)))
        let certificate = signed.intermediate.certificate
        #expect(raw.count == 180)
        #expect(Array(raw[0..<32]) == Array(signed.intermediate.privateKey.publicKey.rawRepresentation))
        let expiry = UInt32(raw[32]) | UInt32(raw[33]) << 8 | UInt32(raw[34]) << 16 | UInt32(raw[35]) << 24
        #expect(Int64(expiry) == Self.today + 3)
        #expect(Array(raw[36..<100]) == certificate.rootSignature)
        // The root signature is over expiry(4, LE) ‖ key(32), checked here independently of the verifier.
        #expect(Self.root.publicKey.isValidSignature(raw[36..<100], for: Array(raw[32..<36]) + Array(raw[0..<32])))
        // And the message signature over salt ‖ nonce ‖ path ‖ time ‖ body.
        let message = Array(raw[100..<116]) + signed.nonce.bytes + Array(Self.path.utf8) + Array(Self.requestTime.utf8) + Self.body
        #expect(signed.intermediate.privateKey.publicKey.isValidSignature(raw[116..<180], for: message))
    }

    @Test func genuineResponseVerifies() throws {
        let signed = Self.sign()
        try Self.verify(signed.header, nonce: signed.nonce.bytes)
        // URL-safe unpadded header text is accepted too.
        let urlSafe = Base64.encodeURLSafe(Base64.decode(signed.header)!)
        try Self.verify(urlSafe, nonce: signed.nonce.bytes)
    }

    @Test func saltDiffersBetweenIdenticalResponses() {
        let intermediate = IntermediateSigningKey.create(root: Self.root, now: Self.now, validForDays: 1)
        let a = Array(Base64.decode(Self.sign(intermediate: intermediate).header)![100..<116])
        let b = Array(Base64.decode(Self.sign(intermediate: intermediate).header)![100..<116])
        #expect(a != b)
    }

    @Test(arguments: [179, 181, 0])
    func wrongLengthIsReported(length: Int) {
        let header = Base64.encode([UInt8](repeating: 7, count: length))
        #expect(throws: ResponseSignatureError.wrongLength) { try Self.verify(header, nonce: ResponseNonce().bytes) }
    }

    @Test func nonBase64IsWrongLength() {
        #expect(throws: ResponseSignatureError.wrongLength) { try Self.verify("not base64 at all!", nonce: ResponseNonce().bytes) }
    }

    @Test func unknownRootKidIsReported() {
        let signed = Self.sign()
        #expect(throws: ResponseSignatureError.unknownKid) { try Self.verify(signed.header, kid: "root9", nonce: signed.nonce.bytes) }
    }

    @Test func intermediateCertifiedByAForeignRootIsReported() throws {
        let foreign = try SigningKey.generate(kid: "root1")  // same kid, different key
        let signed = Self.sign(intermediate: .create(root: foreign, now: Self.now, validForDays: 3))
        #expect(throws: ResponseSignatureError.badRootSignature) { try Self.verify(signed.header, nonce: signed.nonce.bytes) }
    }

    @Test func extendingTheExpiryBreaksTheRootSignature() throws {
        let signed = Self.sign()
        var raw = Array(Base64.decode(signed.header)!)
        raw[33] &+= 1  // push the expiry ~256 days out
        #expect(throws: ResponseSignatureError.badRootSignature) { try Self.verify(Base64.encode(raw), nonce: signed.nonce.bytes) }
    }

    @Test func expiredIntermediateIsReported() throws {
        let intermediate = IntermediateSigningKey.create(root: Self.root, expiryDay: UInt32(Self.today - 1))
        let signed = Self.sign(intermediate: intermediate)
        #expect(throws: ResponseSignatureError.intermediateExpired) { try Self.verify(signed.header, nonce: signed.nonce.bytes) }
        // Its last day is still valid.
        let lastDay = Self.sign(intermediate: .create(root: Self.root, expiryDay: UInt32(Self.today)))
        try Self.verify(lastDay.header, nonce: lastDay.nonce.bytes)
    }

    @Test func everyPartOfTheMessageIsCovered() throws {
        let signed = Self.sign()
        let nonce = signed.nonce.bytes
        func flipped(_ index: Int, _ mask: UInt8) -> String {
            var raw = Array(Base64.decode(signed.header)!)
            raw[index] ^= mask
            return Base64.encode(raw)
        }
        let cases: [(name: String, header: String, nonce: [UInt8], path: String, time: String, body: [UInt8])] = [
            ("replayed for another nonce", signed.header, ResponseNonce().bytes, Self.path, Self.requestTime, Self.body),
            ("other path", signed.header, nonce, "/t1/p1/activate", Self.requestTime, Self.body),
            ("other request time", signed.header, nonce, Self.path, "1781076246124", Self.body),
            ("edited body", signed.header, nonce, Self.path, Self.requestTime, Array(#"{"valid":false}"#.utf8)),
            ("edited salt", flipped(105, 0x80), nonce, Self.path, Self.requestTime, Self.body),
            ("edited message signature", flipped(179, 0x01), nonce, Self.path, Self.requestTime, Self.body),
        ]
        for item in cases {
            #expect(throws: ResponseSignatureError.badMessageSignature, "\(item.name)") {
                try Self.verify(item.header, nonce: item.nonce, path: item.path, requestTime: item.time, body: item.body)
            }
        }
    }

    @Test func storedIntermediateKeysRestore() throws {
        let original = IntermediateSigningKey.create(root: Self.root, now: Self.now, validForDays: 2)
        let restored = try IntermediateSigningKey(
            rootKid: "root1",
            privateKeyRaw: original.privateKey.rawRepresentation,
            certificateBytes: original.certificate.bytes
        )
        #expect(restored.certificate == original.certificate)
        let signed = Self.sign(intermediate: restored)
        try Self.verify(signed.header, nonce: signed.nonce.bytes)
        #expect(throws: ResponseSignatureError.badRootSignature) {
            try IntermediateSigningKey(rootKid: "root1", privateKeyRaw: Curve25519.Signing.PrivateKey().rawRepresentation, certificateBytes: original.certificate.bytes)
        }
        #expect(throws: ResponseSignatureError.wrongLength) {
            try IntermediateSigningKey(rootKid: "root1", privateKeyRaw: original.privateKey.rawRepresentation, certificateBytes: [1, 2, 3])
        }
    }

    @Test func noncesParseOnlyAsTwelveBytes() {
        let nonce = ResponseNonce()
        #expect(nonce.bytes.count == 12)
        #expect(ResponseNonce(header: nonce.header) == nonce)
        #expect(ResponseNonce(header: Base64.encodeURLSafe(nonce.bytes)) == nonce)
        #expect(ResponseNonce(header: Base64.encode([UInt8](repeating: 1, count: 11))) == nil)
        #expect(ResponseNonce(header: Base64.encode([UInt8](repeating: 1, count: 13))) == nil)
        #expect(ResponseNonce(header: "") == nil)
        #expect(ResponseNonce(header: "%%%%%%%%%%%%%%%%") == nil)
        #expect(ResponseNonce() != ResponseNonce())
    }

    @Test func daysCountFromTheEpochInUTC() {
        #expect(keylightDay(0) == 0)
        #expect(keylightDay(86_399) == 0)
        #expect(keylightDay(86_400) == 1)
        #expect(keylightDay(-1) == -1)
    }
}
