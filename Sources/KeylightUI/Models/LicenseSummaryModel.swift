import Foundation
import Keylight

/// The license section of Settings or an About box: the masked key, who it is licensed to, its
/// kind, expiry and updates, the devices in use against the limit, and "deactivate this device".
@MainActor
public final class LicenseSummaryModel: KeylightUIModel {
    public let manager: LicenseManager
    /// The seats, once ``loadDevices()`` has asked the server.
    public private(set) var seats: Seats? { willSet { changing() } }
    public private(set) var failure: LicenseFailure? { willSet { changing() } }
    public private(set) var isWorking = false { willSet { changing() } }

    public init(manager: LicenseManager, strings: UIStrings = UIStrings()) {
        self.manager = manager
        super.init(strings: strings)
    }

    /// One line of the summary: a label and its value.
    public struct Row: Hashable, Sendable {
        public let label: String
        public let value: String
    }

    /// The rows to show, in order; rows without a value are left out.
    public func rows(now: Date = Date()) -> [Row] {
        var rows = [Row(label: strings[.summaryTitle], value: stateName)]
        if let key = manager.maskedLicenseKey { rows.append(Row(label: strings[.summaryKey], value: key)) }
        if let email = manager.customerEmail { rows.append(Row(label: strings[.summaryLicensee], value: email)) }
        if let kind = manager.keyTypeName { rows.append(Row(label: strings[.summaryType], value: kind)) }
        if manager.licenseKey != nil {
            rows.append(Row(label: strings[.summaryExpires], value: manager.licenseExpiresAt.map(day) ?? strings[.summaryNeverExpires]))
        }
        if let until = manager.updatesEntitledUntil { rows.append(Row(label: strings[.summaryUpdatesUntil], value: day(until))) }
        if let seats { rows.append(Row(label: strings[.summaryDevices], value: strings.format(.devicesInUse, seats.devices.count, seats.activationLimit))) }
        return rows
    }

    /// The state in words.
    public var stateName: String {
        switch manager.state {
        case .licensed: strings[.stateLicensed]
        case .trial: strings[.stateTrial]
        case .limited: strings[.stateLimited]
        case .freeTier: strings[.stateFreeTier]
        case .expired: strings[.stateExpired]
        case .invalid: strings[.stateInvalid]
        }
    }

    /// A date as the user's (or the model's) language writes it, without a time.
    func day(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateStyle = .medium
        formatter.timeStyle = .none
        if let language = strings.language { formatter.locale = Locale(identifier: language) }
        return formatter.string(from: date)
    }

    /// Asks the server which devices use the license.
    public func loadDevices() async {
        guard manager.licenseKey != nil else { return }
        isWorking = true
        defer { isWorking = false }
        do {
            seats = try await manager.devices()
            failure = nil
        } catch {
            failure = failure(error)
        }
    }

    public var canDeactivate: Bool { manager.licenseKey != nil && !isWorking }

    /// Frees this device's seat and forgets the license here.
    public func deactivateThisDevice() async {
        guard canDeactivate else { return }
        isWorking = true
        defer { isWorking = false }
        do {
            try await manager.deactivate()
            seats = nil
            failure = nil
        } catch {
            failure = failure(error)
        }
    }

    private func failure(_ error: any Error) -> LicenseFailure {
        LicenseFailure((error as? KeylightError) ?? .transient("\(error)"), strings: strings, renewURL: manager.upgradeURL,
                supportEmail: manager.configuration.branding?.supportEmail)
    }
}
