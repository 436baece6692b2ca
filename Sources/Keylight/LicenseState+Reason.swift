import Foundation

extension LicenseState {
    /// Why the state is not simply "licensed" or "in a trial", for the interface to choose its
    /// words and offer the right way out (``LicenseManager/stateReason``). The state says what the
    /// app may do; the reason says why, and is never a seventh state.
    public enum Reason: Hashable, Sendable {
        /// `.freeTier` or `.expired`: no license, and the trial is over.
        case trialOver
        /// `.expired`: the lease ran out while the app could not reach the server. Reaching it renews it.
        case leaseExpiredOffline
        /// `.expired`: the license was not checked online for longer than the configuration allows
        /// (``Configuration/maxOfflineDays``). Reaching the server lifts it.
        case offlineTooLong(days: Int)
        /// `.expired`: the license itself ended. Renewing it (or a new key) lifts it.
        case licenseExpired
        /// `.invalid`: the seller suspended the license (a payment dispute, say); it may come back.
        case suspended
        /// `.invalid`: the license was revoked (refunded, replaced by a new key, or withdrawn).
        case revoked
        /// `.invalid`: this device's activation was removed on the server (from another device,
        /// the customer portal or the seller's dashboard). Activating again takes a seat.
        case deactivated
        /// `.invalid`: the device clock reads before the server's time at the last contact.
        case clockSetBack
        /// `.invalid`: what is kept here does not verify (a lease for another key, or signed by a
        /// key this app does not trust).
        case tampered
        /// `.expired`: the kept data was dropped for a stricter verification mode; the next
        /// verified answer from the server decides.
        case awaitingVerification
        /// `.limited`: this build was released after the updates the license covers.
        case updatesEnded(until: Date)
        /// `.limited`: a floating license without a seat (none free, or not renewed in time).
        case noFloatingSeat
        /// `.limited`: the license lapsed and its key type keeps fallback access.
        case fallbackAccess
    }
}

extension LicenseState.Reason {
    /// The reason for a refusal the server made (`LICENSE_REVOKED`, …), as kept on the device.
    static func refusal(_ code: String) -> Self {
        switch code {
        case "LICENSE_SUSPENDED": .suspended
        case "INSTANCE_INACTIVE": .deactivated
        default: .revoked
        }
    }
}
