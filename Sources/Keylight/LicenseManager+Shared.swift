/// The app-wide manager of ``LicenseManager/configureShared(_:)``. Main-actor isolated, set by the
/// app at launch: the one piece of global state in the SDK, there because apps asked for a
/// `Keylight.manager`-style entry point (seed 001); injected instances remain the default.
@MainActor
private enum SharedManager {
    static var instance: LicenseManager?
}

extension LicenseManager {
    /// Creates the app-wide manager from `configuration` and returns it. Call once at launch, before
    /// ``shared``; a second call replaces the manager (the previous one stops its timers when released).
    ///
    /// (A type named `Keylight` would shadow this module's name, `Keylight.Configuration` would stop
    /// resolving, so the shared instance lives on `LicenseManager`.)
    @discardableResult
    public static func configureShared(_ configuration: Configuration) -> LicenseManager {
        let manager = LicenseManager(configuration: configuration)
        SharedManager.instance = manager
        return manager
    }

    /// The manager made by ``configureShared(_:)``. Using it before that is a programming error.
    public static var shared: LicenseManager {
        guard let manager = SharedManager.instance else {
            preconditionFailure("LicenseManager.shared used before LicenseManager.configureShared(_:)")
        }
        return manager
    }

    /// The app-wide manager if one was configured.
    public static var sharedIfConfigured: LicenseManager? { SharedManager.instance }
}
