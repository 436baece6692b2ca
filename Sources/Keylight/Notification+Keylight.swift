import Foundation

extension Notification.Name {
    /// Posted by `LicenseManager` on every state transition; `object` is the manager and
    /// `userInfo["state"]` the new state's name.
    public static let keylightLicenseDidChange = Notification.Name("KeylightLicenseDidChange")
}
