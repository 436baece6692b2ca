import Foundation

/// Where the file store keeps one product's files on each platform, decided from plain values so
/// that every branch runs in tests on any platform; ``current(appGroup:bundle:)`` reads those values from the system.
///
/// - Apple platforms: `Application Support/<bundle id>/Keylight/<name>`, or, when an app group is
///   given, `<group container>/Library/Application Support/Keylight/<name>` so an app and its
///   extensions share one license.
/// - Linux and other systems: `$XDG_DATA_HOME/keylight/<name>`, else `~/.local/share/keylight/<name>`.
///
/// SDK 1.x used the XDG path on every platform; on macOS a license kept there is moved once to the
/// new place (``legacyDirectory(name:)``), so nobody is signed out and no seat is spent again.
public struct StorageLocation: Sendable, Hashable {
    public enum Platform: Sendable, Hashable {
        case apple
        case other
    }

    public var platform: Platform
    /// `Application Support` in the user's domain (Apple platforms).
    public var applicationSupport: URL?
    /// The app's bundle identifier; nil for a bare command-line tool.
    public var bundleIdentifier: String?
    /// The container of the app group the configuration names, when there is one.
    public var appGroupContainer: URL?
    /// The user's home directory (inside the sandbox container for a sandboxed Mac app).
    public var homeDirectory: URL
    public var environment: [String: String]

    public init(
        platform: Platform, applicationSupport: URL?, bundleIdentifier: String?, appGroupContainer: URL?,
        homeDirectory: URL, environment: [String: String]
    ) {
        self.platform = platform
        self.applicationSupport = applicationSupport
        self.bundleIdentifier = bundleIdentifier
        self.appGroupContainer = appGroupContainer
        self.homeDirectory = homeDirectory
        self.environment = environment
    }

    /// The folder for one store (`<tenant>-<product>`).
    public func directory(name: String) -> URL {
        switch platform {
        case .apple:
            if let appGroupContainer {
                return appGroupContainer.appendingPathComponent("Library/Application Support/Keylight", isDirectory: true)
                    .appendingPathComponent(name, isDirectory: true)
            }
            let support = applicationSupport ?? homeDirectory.appendingPathComponent("Library/Application Support", isDirectory: true)
            // A command-line tool has no bundle id: its files go under the SDK's own name.
            let owner = bundleIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? "dev.keylight"
            return support.appendingPathComponent(owner, isDirectory: true)
                .appendingPathComponent("Keylight", isDirectory: true)
                .appendingPathComponent(name, isDirectory: true)
        case .other:
            return xdgDirectory(name: name)
        }
    }

    /// Where SDK 1.x kept this store on an Apple platform (only macOS builds of it ever ran), to
    /// move it from once; nil where nothing moves.
    public func legacyDirectory(name: String) -> URL? {
        platform == .apple ? xdgDirectory(name: name) : nil
    }

    private func xdgDirectory(name: String) -> URL {
        let base = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? homeDirectory.appendingPathComponent(".local/share", isDirectory: true)
        return base.appendingPathComponent("keylight", isDirectory: true).appendingPathComponent(name, isDirectory: true)
    }
}

extension StorageLocation {
    /// This process's location. `appGroup`: an app-group identifier whose container holds the files.
    public static func current(appGroup: String? = nil, bundle: Bundle = .main) -> StorageLocation {
        StorageLocation(
            platform: isApplePlatform ? .apple : .other,
            applicationSupport: FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first,
            bundleIdentifier: bundle.bundleIdentifier,
            appGroupContainer: appGroup.flatMap(Self.groupContainer),
            // NSHomeDirectory is on every platform; for a sandboxed app it is the container's
            // home, the folder SDK 1.x wrote under.
            homeDirectory: URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true),
            environment: ProcessInfo.processInfo.environment
        )
    }

    static var isApplePlatform: Bool {
        #if canImport(Darwin)
        true
        #else
        false
        #endif
    }

    private static func groupContainer(_ identifier: String) -> URL? {
        #if canImport(Darwin)
        FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier)
        #else
        nil
        #endif
    }
}
