import Crypto
import Foundation
import KeylightTestSupport
@testable import KeylightCore
import KeylightSigning
import Testing

@Suite(.timeLimit(.minutes(3))) struct SigningKeyTests {
    @Test func keyFileRoundTripsWithMode0600() throws {
        let directory = try temporaryDirectory()
        let path = directory.appendingPathComponent("signing.json").path
        let key = try SigningKey.generate(kid: "k1")
        try key.write(to: path)
        #expect(SecretFile.permissions(of: path) == 0o600)
        let loaded = try SigningKey.load(from: path)
        #expect(loaded.kid == "k1")
        #expect(loaded.privateKey.rawRepresentation == key.privateKey.rawRepresentation)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: String])
        #expect(Set(object.keys) == ["kid", "private_key", "public_key"])
        #expect(Base64.decode(object["private_key"]!)?.count == 32)
        #expect(Base64.decode(object["public_key"]!) == key.publicKey.rawRepresentation)
        // No temporary files are left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["signing.json"])
    }

    @Test func existingKeyFilesAreNotOverwrittenUnlessAsked() throws {
        let path = try temporaryDirectory().appendingPathComponent("signing.json").path
        let first = try SigningKey.generate()
        try first.write(to: path)
        #expect(throws: SecretFileError.alreadyExists(path)) { try SigningKey.generate().write(to: path) }
        #expect(try SigningKey.load(from: path).kid == first.kid)
        let second = try SigningKey.generate()
        try second.write(to: path, overwrite: true)
        #expect(try SigningKey.load(from: path).kid == second.kid)
        #expect(SecretFile.permissions(of: path) == 0o600)
    }

    @Test func overwritingNarrowsAWideFileTo0600() throws {
        let path = try temporaryDirectory().appendingPathComponent("wide.json").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8), attributes: [.posixPermissions: 0o644]))
        try SigningKey.generate().write(to: path, overwrite: true)
        #expect(SecretFile.permissions(of: path) == 0o600)
    }

    @Test func mismatchedPublicKeyIsRefused() throws {
        let key = try SigningKey.generate(kid: "k1")
        var object = try #require(try JSONSerialization.jsonObject(with: key.fileJSON()) as? [String: String])
        object["public_key"] = Base64.encode(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(throws: KeyError.publicKeyMismatch) { try SigningKey(fileJSON: JSONSerialization.data(withJSONObject: object)) }
    }

    @Test(arguments: [#"{}"#, #"{"kid":"k1","private_key":"AAAA","public_key":""}"#, "nope"])
    func malformedKeyFilesAreRefused(json: String) {
        #expect(throws: KeyError.malformedKeyFile) { try SigningKey(fileJSON: Data(json.utf8)) }
    }

    @Test(arguments: ["", "a|b", "with space", String(repeating: "k", count: 65), "ké"])
    func invalidKidsAreRefused(kid: String) {
        #expect(throws: KeyError.invalidKid) { try SigningKey.generate(kid: kid) }
    }

    @Test func defaultKidIsDerivedFromThePublicKey() throws {
        let key = try SigningKey.generate()
        #expect(key.kid == SigningKey.defaultKid(for: key.publicKey))
        #expect(key.kid.count == 11 && key.kid.hasPrefix("k"))
    }

    @Test func descriptionsNeverShowThePrivateKey() throws {
        let key = try SigningKey.generate(kid: "k1")
        let secret = Base64.encode(key.privateKey.rawRepresentation)
        var dumped = ""
        dump(key, to: &dumped)
        for text in ["\(key)", String(reflecting: key), dumped] {
            #expect(!text.contains(secret))
            #expect(text.contains("k1"))
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct KeysetTests {
    static let k1 = try! SigningKey.generate(kid: "k1")
    static let k2 = try! SigningKey.generate(kid: "k2")
    static let k3 = try! SigningKey.generate(kid: "k3")

    @Test func parsesTheWellKnownDocumentAndDropsRetiredKeys() throws {
        let document = KeysetDocument(keys: [
            .init(kid: "k1", publicKey: Self.k1.publicKey, status: .active),
            .init(kid: "k2", publicKey: Self.k2.publicKey, status: .grace),
            .init(kid: "k3", publicKey: Self.k3.publicKey, status: .retired),
        ])
        let json = try JSONEncoder().encode(document)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"public_key\""))
        let keyset = try Keyset(json: json)
        #expect(Set(keyset.keys.keys) == ["k1", "k2"])
        #expect(keyset["k2"]?.rawRepresentation == Self.k2.publicKey.rawRepresentation)
    }

    @Test func parsesAPlainMap() throws {
        let json = #"{"k1":"\#(Base64.encode(Self.k1.publicKey.rawRepresentation))","k2":"\#(Base64.encodeURLSafe(Self.k2.publicKey.rawRepresentation))"}"#
        let keyset = try Keyset(json: Data(json.utf8))
        #expect(Set(keyset.keys.keys) == ["k1", "k2"])
        #expect(keyset["k2"]?.rawRepresentation == Self.k2.publicKey.rawRepresentation)
    }

    @Test(arguments: [#"[]"#, #"{"keys":[1]}"#, #"{"k1":5}"#, "garbage", #"{"keys":[{"kid":"k1"}]}"#])
    func malformedKeysetsAreRefused(json: String) {
        #expect(throws: KeyError.malformedKeyset) { try Keyset(json: Data(json.utf8)) }
    }

    @Test(arguments: [#"{"k1":"AAAA"}"#, #"{"keys":[{"kid":"k1","public_key":"!!","status":"active"}]}"#])
    func wrongLengthPublicKeysAreRefused(json: String) {
        #expect(throws: KeyError.invalidPublicKey(kid: "k1")) { try Keyset(json: Data(json.utf8)) }
    }
}
