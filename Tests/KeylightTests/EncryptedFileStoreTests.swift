import Crypto
import Foundation
@testable import Keylight
import KeylightCore
import Testing

@Suite(.timeLimit(.minutes(3))) struct EncryptedFileStoreTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("keylight-store-\(UUID().uuidString)")
    }

    @Test func roundTripsWithOwnerOnlyFilesAndNothingInClear() throws {
        let directory = Self.directory()
        let store = EncryptedFileStore(directory: directory)
        try store.set(Data("license \(Fixture.key) secret".utf8), for: "state")
        #expect(try store.data(for: "state") == Data("license \(Fixture.key) secret".utf8))
        #expect(try store.data(for: "missing") == nil)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 2 && files.contains("store.key"))
        for file in files {
            let path = directory.appendingPathComponent(file).path
            #expect(SecretFile.permissions(of: path) == 0o600)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(bytes.range(of: Data(Fixture.key.utf8)) == nil)
            #expect(bytes.range(of: Data("state".utf8)) == nil)
            #expect(!file.contains("state"))
        }
        try store.set(nil, for: "state")
        #expect(try store.data(for: "state") == nil)
    }

    @Test func anOversizedItemOrKeyIsAnErrorNotAnAllocation() throws {
        let directory = Self.directory()
        let store = EncryptedFileStore(directory: directory)
        try store.set(Data("value".utf8), for: "state")
        let sealed = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".sealed") })
        let itemPath = directory.appendingPathComponent(sealed).path
        #expect(try SecretFile.read(itemPath, limit: 1 << 20)?.isEmpty == false)
        #expect(try SecretFile.read(directory.appendingPathComponent("absent").path, limit: 16) == nil)
        #expect(throws: SecretFileError.tooLarge(itemPath, limit: 4)) { try SecretFile.read(itemPath, limit: 4) }

        try Data(count: EncryptedFileStore.itemLimit + 1).write(to: URL(fileURLWithPath: itemPath))
        #expect(throws: KeylightError.self) { try store.data(for: "state") }
        try store.set(Data("value".utf8), for: "state")
        try Data(count: 65).write(to: directory.appendingPathComponent("store.key"))
        #expect(throws: KeylightError.self) { try store.data(for: "state") }
    }

    @Test func tamperingOrAnotherKeyIsAnError() throws {
        let directory = Self.directory()
        let store = EncryptedFileStore(directory: directory)
        try store.set(Data("value".utf8), for: "state")
        let sealed = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".sealed") })
        let url = directory.appendingPathComponent(sealed)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 1] ^= 0x01
        try bytes.write(to: url)
        #expect(throws: KeylightError.self) { try store.data(for: "state") }
        try store.set(Data("value".utf8), for: "state")
        try Data(repeating: 7, count: 32).write(to: directory.appendingPathComponent("store.key"))
        #expect(throws: KeylightError.self) { try store.data(for: "state") }
    }

    @MainActor @Test func managerStateNeverHoldsTheKeyInClear() async throws {
        let directory = Self.directory()
        let server = FakeServer(clock: TestClock())
        let manager = Fixture.manager(server: server, store: EncryptedFileStore(directory: directory))
        await manager.checkOnLaunch()
        try await manager.activate(key: Fixture.key)
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(bytes.range(of: Data(Fixture.key.utf8)) == nil)
        }
        let relaunched = Fixture.manager(server: server, store: EncryptedFileStore(directory: directory))
        server.mode = .offline
        await relaunched.checkOnLaunch()
        #expect(relaunched.state == .licensed)
    }

    /// Writers racing to create a new store's key (threads here; an app and its extension in
    /// life) agree on one key: every item each of them sealed opens afterwards. The key is put in
    /// place with link(), which fails if another got there first, never with a check then rename.
    @Test func racingFirstWritesAgreeOnOneKey() async throws {
        for round in 0..<20 {
            let directory = Self.directory()
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        let store = EncryptedFileStore(directory: directory)
                        try? store.set(Data("value \(writer)".utf8), for: "item-\(writer)")
                    }
                }
            }
            let store = EncryptedFileStore(directory: directory)
            for writer in 0..<8 {
                #expect(try store.data(for: "item-\(writer)") == Data("value \(writer)".utf8), "round \(round), writer \(writer)")
            }
        }
    }

    @Test func aSecretFileIsNeverReplacedUnlessAsked() throws {
        let directory = Self.directory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("key").path
        try SecretFile.write(Data("first".utf8), to: path)
        #expect(throws: SecretFileError.alreadyExists(path)) { try SecretFile.write(Data("second".utf8), to: path) }
        #expect(try SecretFile.read(path, limit: 64) == Data("first".utf8))
        try SecretFile.write(Data("third".utf8), to: path, overwrite: true)
        #expect(try SecretFile.read(path, limit: 64) == Data("third".utf8))
        // No temporary file is left behind either way.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["key"])
    }
}
