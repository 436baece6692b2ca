import Foundation
@testable import Keylight
import KeylightCore
import Testing

/// Where each platform keeps the file store, decided from plain values (every branch runs here),
/// the move of a license SDK 1.x kept under the XDG path on macOS, and a store read before the
/// first unlock.
@Suite(.timeLimit(.minutes(2))) struct StorageLocationTests {
    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("keylight-location-\(UUID().uuidString)", isDirectory: true)
    }

    static func location(_ platform: StorageLocation.Platform, bundle: String? = "com.acme.widget", group: URL? = nil, xdg: String? = nil) -> StorageLocation {
        StorageLocation(
            platform: platform,
            applicationSupport: URL(fileURLWithPath: "/Users/ann/Library/Application Support", isDirectory: true),
            bundleIdentifier: bundle, appGroupContainer: group,
            homeDirectory: URL(fileURLWithPath: "/Users/ann", isDirectory: true),
            environment: xdg.map { ["XDG_DATA_HOME": $0] } ?? [:]
        )
    }

    @Test func applePlatformsUseApplicationSupportUnderTheBundleId() {
        let apple = Self.location(.apple, xdg: "/elsewhere")
        #expect(apple.directory(name: "acme-app").path == "/Users/ann/Library/Application Support/com.acme.widget/Keylight/acme-app")
        // A command-line tool without a bundle id still gets a folder of its own, never XDG's.
        #expect(Self.location(.apple, bundle: nil).directory(name: "acme-app").path
            == "/Users/ann/Library/Application Support/dev.keylight/Keylight/acme-app")
        #expect(Self.location(.apple, bundle: "").directory(name: "acme-app").path.contains("/dev.keylight/"))
        // The XDG path of SDK 1.x is where a license is moved from, honouring XDG_DATA_HOME as 1.x did.
        #expect(apple.legacyDirectory(name: "acme-app")?.path == "/elsewhere/keylight/acme-app")
        #expect(Self.location(.apple).legacyDirectory(name: "acme-app")?.path == "/Users/ann/.local/share/keylight/acme-app")
    }

    @Test func anAppGroupSharesItsContainer() {
        let group = URL(fileURLWithPath: "/Users/ann/Library/Group Containers/TEAM.com.acme.shared", isDirectory: true)
        #expect(Self.location(.apple, group: group).directory(name: "acme-app").path
            == "/Users/ann/Library/Group Containers/TEAM.com.acme.shared/Library/Application Support/Keylight/acme-app")
    }

    @Test func linuxUsesXDGAndMovesNothing() {
        #expect(Self.location(.other, xdg: "/data").directory(name: "acme-app").path == "/data/keylight/acme-app")
        #expect(Self.location(.other).directory(name: "acme-app").path == "/Users/ann/.local/share/keylight/acme-app")
        #expect(Self.location(.other, xdg: "").directory(name: "acme-app").path == "/Users/ann/.local/share/keylight/acme-app")
        #expect(Self.location(.other).legacyDirectory(name: "acme-app") == nil)
    }

    @Test func thisProcessLocationMatchesItsPlatform() {
        // platform: each branch states what it expects of the platform the tests run on.
        let current = StorageLocation.current()
        #if canImport(Darwin)
        #expect(current.platform == .apple)
        #else
        #expect(current.platform == .other)
        #expect(EncryptedFileStore.defaultDirectory(name: "x").path.hasSuffix("/keylight/x"))
        #endif
    }

    /// A Mac that activated with SDK 1.x relaunches with this one: the license is read from the old
    /// folder once, moved, and still licensed offline with the same device identity (no new seat).
    @MainActor @Test func aLicenseKeptBySDK1IsMovedAndStillLicensed() async throws {
        let root = Self.folder()
        let legacy = root.appendingPathComponent("old/keylight/acme-app", isDirectory: true)
        let current = root.appendingPathComponent("new/com.acme.widget/Keylight/acme-app", isDirectory: true)
        let server = FakeServer(clock: TestClock())
        let old = try await Fixture.activated(server: server, store: EncryptedFileStore(directory: legacy))
        #expect(old.state == .licensed)
        let machineBefore = try await old.machineHash()
        let activations = server.count("activate")

        server.mode = .offline
        let moved = EncryptedFileStore(directory: current, legacyDirectory: legacy)
        let relaunched = Fixture.manager(server: server, store: moved)
        await relaunched.checkOnLaunch()
        #expect(relaunched.state == .licensed)
        #expect(relaunched.instanceId == "instance-1")
        #expect(try await relaunched.machineHash() == machineBefore)
        #expect(server.count("activate") == activations)
        #expect(!FileManager.default.fileExists(atPath: legacy.path))
        #expect(FileManager.default.fileExists(atPath: current.appendingPathComponent("store.key").path))

        // Once moved, a folder that reappears at the old place (another copy) is left alone.
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        try Data(repeating: 1, count: 32).write(to: legacy.appendingPathComponent("store.key"))
        let again = Fixture.manager(server: server, store: EncryptedFileStore(directory: current, legacyDirectory: legacy))
        await again.checkOnLaunch()
        #expect(again.state == .licensed)
        #expect(FileManager.default.fileExists(atPath: legacy.appendingPathComponent("store.key").path))
    }

    @Test func nothingToMoveIsNotAnErrorAndIsLookedForOnce() throws {
        let root = Self.folder()
        let legacy = root.appendingPathComponent("later")
        let store = EncryptedFileStore(directory: root.appendingPathComponent("new"), legacyDirectory: legacy)
        #expect(try store.data(for: "state") == nil)
        // A folder that appears at the old place afterwards is not looked for again (nor moved).
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true)
        try Data(repeating: 1, count: 32).write(to: legacy.appendingPathComponent("store.key"))
        #expect(try store.data(for: "state") == nil)
        try store.set(Data("x".utf8), for: "state")
        #expect(try store.data(for: "state") == Data("x".utf8))
        #expect(FileManager.default.fileExists(atPath: legacy.appendingPathComponent("store.key").path))
    }

    /// iOS answers a read of a file protected until the first unlock with EPERM. The store reports
    /// that as locked, not damaged, and the manager neither resolves nor overwrites the license.
    /// (Simulated with a real system error the store is told to read as "locked": a symbolic link
    /// loop in place of the store's key, which fails `open` with ELOOP even for root.)
    @MainActor @Test func aFileStoreReadBeforeFirstUnlockNeverOverwritesTheLicense() async throws {
        let directory = Self.folder()
        let server = FakeServer(clock: TestClock())
        _ = try await Fixture.activated(server: server, store: EncryptedFileStore(directory: directory))
        let keyPath = directory.appendingPathComponent("store.key").path
        let sealedBefore = try Self.sealedFiles(in: directory)
        let savedKey = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        try FileManager.default.removeItem(atPath: keyPath)
        try FileManager.default.createSymbolicLink(atPath: keyPath, withDestinationPath: keyPath)

        let locked = EncryptedFileStore(directory: directory, legacyDirectory: nil, lockedErrors: [ELOOP])
        #expect(throws: KeylightError.storageLocked) { try locked.data(for: "state") }
        // The same failure where the platform does not read it as locked is damage.
        let error = #expect(throws: KeylightError.self) { try EncryptedFileStore(directory: directory, legacyDirectory: nil, lockedErrors: []).data(for: "state") }
        #expect(error?.code == "STORAGE")

        let relaunched = Fixture.manager(server: server, store: locked)
        await relaunched.checkOnLaunch()
        await relaunched.waitUntilIdle()
        #expect(relaunched.lastError == .storageLocked)
        #expect(relaunched.isResolved == false)
        await #expect(throws: KeylightError.storageLocked) { try await relaunched.activate(key: Fixture.key) }
        #expect(try Self.sealedFiles(in: directory) == sealedBefore)

        // Unlocked: the license is there, unchanged.
        try FileManager.default.removeItem(atPath: keyPath)
        try savedKey.write(to: URL(fileURLWithPath: keyPath))
        await relaunched.checkOnLaunch()
        #expect(relaunched.isResolved)
        #expect(relaunched.state == .licensed)
    }

    static func sealedFiles(in directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".sealed") {
            files[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return files
    }
}
