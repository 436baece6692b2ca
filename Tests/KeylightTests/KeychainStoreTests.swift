import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// A Keychain in memory that answers the four calls with the statuses the real one gives, and can
/// be told to be locked (before the first unlock) or to hold a corrupt item.
final class FakeKeychain: KeychainServices, @unchecked Sendable {
    // @unchecked: every field is behind `lock`.
    struct Call: Equatable { var name: String; var account: String? }
    private let lock = NSLock()
    private var items: [String: [String: any Sendable]] = [:]
    private var _calls: [Call] = []
    private var _locked = false
    private var _writes: [[String: any Sendable]] = []

    var locked: Bool { get { lock.withLock { _locked } } set { lock.withLock { _locked = newValue } } }
    var calls: [Call] { lock.withLock { _calls } }
    /// Every attribute set written by add or update.
    var writes: [[String: any Sendable]] { lock.withLock { _writes } }
    func plant(_ value: any Sendable, account: String, service: String) {
        lock.withLock { items[service + "/" + account] = [KeychainAttribute.valueData: value] }
    }

    private func id(_ query: [String: any Sendable]) -> String {
        "\(query[KeychainAttribute.service] as? String ?? "")/\(query[KeychainAttribute.account] as? String ?? "")"
    }

    func add(_ attributes: [String: any Sendable]) -> Int32 {
        lock.withLock {
            _calls.append(Call(name: "add", account: attributes[KeychainAttribute.account] as? String))
            if _locked { return KeychainStatus.interactionNotAllowed }
            if items[id(attributes)] != nil { return KeychainStatus.duplicateItem }
            _writes.append(attributes)
            items[id(attributes)] = attributes
            return KeychainStatus.success
        }
    }

    func copyMatching(_ query: [String: any Sendable]) -> (status: Int32, result: Any?) {
        lock.withLock {
            _calls.append(Call(name: "copy", account: query[KeychainAttribute.account] as? String))
            if _locked { return (KeychainStatus.interactionNotAllowed, nil) }
            guard let item = items[id(query)] else { return (KeychainStatus.itemNotFound, nil) }
            return (KeychainStatus.success, item[KeychainAttribute.valueData])
        }
    }

    func update(_ query: [String: any Sendable], _ attributes: [String: any Sendable]) -> Int32 {
        lock.withLock {
            _calls.append(Call(name: "update", account: query[KeychainAttribute.account] as? String))
            if _locked { return KeychainStatus.interactionNotAllowed }
            guard items[id(query)] != nil else { return KeychainStatus.itemNotFound }
            _writes.append(attributes)
            items[id(query)]?.merge(attributes) { $1 }
            return KeychainStatus.success
        }
    }

    func delete(_ query: [String: any Sendable]) -> Int32 {
        lock.withLock {
            _calls.append(Call(name: "delete", account: query[KeychainAttribute.account] as? String))
            if _locked { return KeychainStatus.interactionNotAllowed }
            return items.removeValue(forKey: id(query)) == nil ? KeychainStatus.itemNotFound : KeychainStatus.success
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct KeychainStoreTests {
    @Test func aMissingItemIsNilAndANewOneIsAdded() throws {
        let keychain = FakeKeychain()
        let store = KeychainStore(service: "dev.keylight.acme.app", keychain: keychain)
        #expect(try store.data(for: "state") == nil)
        try store.set(Data("one".utf8), for: "state")
        #expect(try store.data(for: "state") == Data("one".utf8))
        #expect(keychain.calls.map(\.name) == ["copy", "add", "copy"])
    }

    @Test func aDuplicateItemIsUpdatedInPlace() throws {
        let keychain = FakeKeychain()
        let store = KeylightStoreFactory.store(keychain)
        try store.set(Data("one".utf8), for: "state")
        try store.set(Data("two".utf8), for: "state")
        #expect(try store.data(for: "state") == Data("two".utf8))
        #expect(keychain.calls.map(\.name) == ["add", "add", "update", "copy"])
    }

    @Test func nilDeletesAndDeletingNothingIsFine() throws {
        let keychain = FakeKeychain()
        let store = KeylightStoreFactory.store(keychain)
        try store.set(Data("one".utf8), for: "state")
        try store.set(nil, for: "state")
        #expect(try store.data(for: "state") == nil)
        try store.set(nil, for: "state")
    }

    @Test func itemsAreThisDeviceOnlyAndNeverSynchronised() throws {
        let keychain = FakeKeychain()
        try KeylightStoreFactory.store(keychain).set(Data("one".utf8), for: "state")
        try KeylightStoreFactory.store(keychain).set(Data("two".utf8), for: "state")
        let trust = KeychainStore(service: "trust", accessibility: .whenUnlockedThisDeviceOnly, keychain: keychain)
        try trust.set(Data("three".utf8), for: "identity")
        #expect(keychain.writes.count == 3)
        for attributes in keychain.writes {
            let accessible = try #require(attributes[KeychainAttribute.accessible] as? String)
            // Every class the store can use is a ThisDeviceOnly one, never AfterFirstUnlock or Always.
            #expect(["cku", "aku", "akpu"].contains(accessible))
        }
        #expect(keychain.writes[0][KeychainAttribute.accessible] as? String == "cku")
        #expect(keychain.writes[0][KeychainAttribute.synchronizable] as? Bool == false)  // the add carries the query
        #expect(keychain.writes[2][KeychainAttribute.accessible] as? String == "aku")
        // The query every call is made with: outside iCloud Keychain.
        let query = KeylightStoreFactory.store(keychain).query("state")
        #expect(query[KeychainAttribute.synchronizable] as? Bool == false)
        #expect(query[KeychainAttribute.itemClass] as? String == KeychainAttribute.genericPassword)
        #expect(KeychainAccessibility.allCases.allSatisfy { $0.rawValue.hasSuffix("u") })
    }

    @Test func aLockedKeychainIsStorageLockedNotAnError() throws {
        let keychain = FakeKeychain()
        keychain.locked = true
        let store = KeylightStoreFactory.store(keychain)
        #expect(throws: KeylightError.storageLocked) { try store.data(for: "state") }
        #expect(throws: KeylightError.storageLocked) { try store.set(Data("x".utf8), for: "state") }
    }

    @Test func aCorruptItemIsAStorageError() throws {
        let keychain = FakeKeychain()
        keychain.plant("not data", account: "state", service: "dev.keylight.acme.app")
        let error = #expect(throws: KeylightError.self) { try KeylightStoreFactory.store(keychain).data(for: "state") }
        #expect(error?.code == "STORAGE")
    }

    @Test func withoutAKeychainEveryCallSaysUnimplemented() {
        #if !canImport(Security)
        let keychain = SystemKeychain()
        #expect(keychain.add([:]) == KeychainStatus.unimplemented)
        #expect(keychain.copyMatching([:]).status == KeychainStatus.unimplemented)
        #expect(KeychainStore.isAvailable == false)
        #expect(StorageBackend.platformDefault == .encryptedFile())
        #endif
    }

    #if canImport(Security)
    @Test func attributeNamesAreTheSecurityFrameworks() {
        #expect(KeychainAttribute.itemClass == kSecClass as String)
        #expect(KeychainAttribute.genericPassword == kSecClassGenericPassword as String)
        #expect(KeychainAttribute.service == kSecAttrService as String)
        #expect(KeychainAttribute.account == kSecAttrAccount as String)
        #expect(KeychainAttribute.synchronizable == kSecAttrSynchronizable as String)
        #expect(KeychainAttribute.accessible == kSecAttrAccessible as String)
        #expect(KeychainAttribute.valueData == kSecValueData as String)
        #expect(KeychainAttribute.returnData == kSecReturnData as String)
        #expect(KeychainAttribute.matchLimit == kSecMatchLimit as String)
        #expect(KeychainAttribute.matchLimitOne == kSecMatchLimitOne as String)
        #expect(KeychainAccessibility.afterFirstUnlockThisDeviceOnly.rawValue == kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        #expect(KeychainAccessibility.whenUnlockedThisDeviceOnly.rawValue == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
        #expect(KeychainAccessibility.whenPasscodeSetThisDeviceOnly.rawValue == kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String)
        #expect(KeychainStatus.interactionNotAllowed == errSecInteractionNotAllowed)
        #expect(KeychainStatus.duplicateItem == errSecDuplicateItem)
        #expect(KeychainStatus.itemNotFound == errSecItemNotFound)
    }
    #endif
}

/// The license store apps get on Apple platforms, over a fake Keychain.
enum KeylightStoreFactory {
    static func store(_ keychain: FakeKeychain) -> KeychainStore {
        KeychainStore(service: "dev.keylight.acme.app", keychain: keychain)
    }
}

@MainActor
@Suite(.timeLimit(.minutes(3))) struct LockedKeychainLaunchTests {
    /// A launch before the first unlock (a background refresh at boot) reads a locked Keychain:
    /// the manager must neither forget the license nor call it invalid, and must recover by itself.
    @Test func aLaunchBeforeTheFirstUnlockKeepsTheLicenseAndRecovers() async throws {
        let server = FakeServer(clock: TestClock())
        let keychain = FakeKeychain()
        let store = KeylightStoreFactory.store(keychain)
        let first = Fixture.manager(server: server, store: store)
        await first.checkOnLaunch()
        await first.waitUntilIdle()
        try await first.activate(key: Fixture.key)
        #expect(first.state == .licensed)
        let kept = try #require(try store.data(for: PersistedState.storeKey))

        keychain.locked = true
        let requestsBefore = server.requests.count
        let writesBefore = keychain.writes.count
        let manager = Fixture.manager(server: server, store: store) { $0.refreshPolicy.lockedStoreRetry = 0.05 }
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state != .invalid)
        #expect(manager.lastError == .storageLocked)
        await manager.refreshIfNeeded(force: true)
        await #expect(throws: KeylightError.storageLocked) { try await manager.activate(key: Fixture.key) }
        await #expect(throws: KeylightError.storageLocked) { try await manager.deactivate() }
        // Nothing was written over the license, and nothing was sent with an empty state.
        #expect(keychain.writes.count == writesBefore)
        #expect(!keychain.calls.contains { $0.name == "delete" })
        #expect(server.requests.count == requestsBefore)

        keychain.locked = false
        let deadline = ContinuousClock.now + .seconds(10)
        while manager.state != .licensed, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(manager.state == .licensed)
        #expect(manager.instanceId == "instance-1")
        keychain.locked = false
        #expect(try store.data(for: PersistedState.storeKey).map { try PersistedState.decode($0).state.licenseKey } == (try PersistedState.decode(kept).state.licenseKey))
    }

    @Test func aCorruptItemStartsAfreshInsteadOfNeverLaunching() async throws {
        let server = FakeServer(clock: TestClock())
        let keychain = FakeKeychain()
        keychain.plant(Data("{not json".utf8), account: PersistedState.storeKey, service: "dev.keylight.acme.app")
        let manager = Fixture.manager(server: server, store: KeylightStoreFactory.store(keychain), trialDaysSeed: 14)
        await manager.checkOnLaunch()
        await manager.waitUntilIdle()
        #expect(manager.state == .trial(daysLeft: 14))
        // The unreadable item was replaced by a readable one.
        let data = try #require(try KeylightStoreFactory.store(keychain).data(for: PersistedState.storeKey))
        #expect((try? PersistedState.decode(data)) != nil)
    }
}
