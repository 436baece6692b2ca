import Foundation
import Keylight

/// The activation window: a key typed or pasted, activated, with a way out of each failure —
/// seats full (free one, and the activation runs again), wrong key, revoked, expired (renew),
/// offline (retry, or the offline path) and configuration mistakes.
@MainActor
public final class ActivationModel: KeylightUIModel {
    public enum Phase: Hashable, Sendable {
        case entering
        case activating
        case activated
        /// Every seat is taken: these devices hold them.
        case seatsFull(Seats)
        /// Freeing `device`, then activating again.
        case freeing(Device)
        case failed(LicenseFailure)
    }

    public let manager: LicenseManager
    /// The key as cleaned (bind the text field to ``keyText``).
    public private(set) var entry: KeyEntry { willSet { changing() } }
    public private(set) var phase: Phase = .entering { willSet { changing() } }

    /// The activation under way, cancelled by ``cancel()``; a result that arrives after a cancel
    /// (or after a newer attempt) is ignored by its number.
    private var task: Task<Void, Never>?
    private var attempt = 0

    public init(manager: LicenseManager, strings: UIStrings = UIStrings()) {
        self.manager = manager
        self.entry = KeyEntry("", prefix: manager.configuration.keyPrefix)
        super.init(strings: strings)
    }

    /// What the field shows; setting it cleans and checks the text (a paste full of spaces,
    /// line breaks or lower case reads as the key).
    public var keyText: String {
        get { entry.text }
        set {
            entry = KeyEntry(newValue, prefix: manager.configuration.keyPrefix)
            if case .failed = phase { phase = .entering }
        }
    }

    public var title: String { strings.format(.activateTitle, appName) }
    var appName: String { manager.configuration.branding?.appName ?? "" }

    /// The hint under the field as the user types; nil when there is nothing to say.
    public var keyHint: String? {
        let prefix = manager.configuration.keyPrefix
        return switch entry.check {
        case .empty, .ready: nil
        case .incomplete: strings.format(.keyIncomplete, KeyEntry.example(prefix: prefix))
        case .wrongProduct: strings.format(.keyWrongProduct, prefix)
        case .invalid: strings[.keyInvalid]
        }
    }

    public var canActivate: Bool {
        guard entry.check == .ready else { return false }
        switch phase {
        case .entering, .failed: return true
        default: return false
        }
    }

    public var isBusy: Bool {
        switch phase {
        case .activating, .freeing: true
        default: false
        }
    }

    /// The line shown while busy or once done.
    public var statusText: String? {
        switch phase {
        case .activating: strings[.activating]
        case .freeing(let device): strings.format(.freeing, device.name)
        case .activated: strings.format(.activated, appName.isEmpty ? strings[.stateLicensed] : appName)
        case .seatsFull(let seats): strings.format(.seatsFullTitle, seats.activationLimit)
        case .failed(let failure): failure.title
        case .entering: nil
        }
    }

    /// Activates the key in the field (Return).
    public func activate() {
        guard canActivate else { return }
        run(key: entry.text) { manager, key in try await manager.activate(key: key) }
    }

    /// Stops the activation under way (Escape); the window is back to the key.
    public func cancel() {
        attempt += 1
        task?.cancel()
        task = nil
        if isBusy { phase = .entering }
    }

    /// Frees `device`'s seat with this key, then activates this device in its place.
    public func free(_ device: Device) {
        guard case .seatsFull = phase else { return }
        let key = entry.text
        attempt += 1
        let number = attempt
        phase = .freeing(device)
        task = Task { [manager] in
            do {
                try await manager.deactivate(device: device)
                guard number == self.attempt, !Task.isCancelled else { return }
                self.run(key: key) { manager, key in try await manager.activate(key: key) }
            } catch {
                guard number == self.attempt, !Task.isCancelled else { return }
                self.finish(error)
            }
        }
    }

    /// The action of a failure's button (``LicenseFailure/Action``), where the model can take it; opening
    /// a page or the offline window is the view's (it owns the window).
    public func perform(_ action: LicenseFailure.Action) {
        switch action {
        case .retry: phase = .entering; activate()
        case .editKey: phase = .entering
        case .renew, .activateOffline, .contactSupport: break
        }
    }

    func run(key: String, _ operation: @escaping @MainActor (LicenseManager, String) async throws -> Void) {
        attempt += 1
        let number = attempt
        phase = .activating
        task = Task { [manager] in
            do {
                try await operation(manager, key)
                guard number == self.attempt else { return }
                self.phase = .activated
            } catch {
                guard number == self.attempt else { return }
                self.finish(error)
            }
            self.task = nil
        }
    }

    private func finish(_ error: any Error) {
        let keylight = (error as? KeylightError) ?? .transient("\(error)")
        if Task.isCancelled || error is CancellationError {
            phase = .entering
        } else if keylight.kind == .activationLimitReached, let seats = keylight.seats, !seats.devices.isEmpty {
            phase = .seatsFull(seats)
        } else {
            phase = .failed(LicenseFailure(keylight, strings: strings, renewURL: manager.upgradeURL, supportEmail: manager.configuration.branding?.supportEmail))
        }
    }

    /// "Last used …" for a device in the seats list, in the model's language.
    public func lastUsed(_ device: Device) -> String {
        if device.isOffline { return strings[.deviceOffline] }
        let formatter = DateFormatter()
        formatter.dateStyle = .medium
        formatter.timeStyle = .short
        if let language = strings.language { formatter.locale = Locale(identifier: language) }
        return strings.format(.deviceLastUsed, formatter.string(from: device.lastSeenAt))
    }

    /// The accessibility label of a device's "Free" button.
    public func freeLabel(_ device: Device) -> String { strings.format(.freeDeviceLabel, device.name) }
}
