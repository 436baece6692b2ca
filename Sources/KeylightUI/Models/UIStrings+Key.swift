extension UIStrings {
    /// One text of the license window. The raw value is its key in the `.lproj` tables.
    public enum Key: String, CaseIterable, Sendable {
        case activateTitle
        case keyFieldLabel
        case keyFieldPrompt
        case keyIncomplete
        case keyWrongProduct
        case keyInvalid
        case activateButton
        case cancelButton
        case closeButton
        case activating
        case activated
        case seatsFullTitle
        case seatsFullMessage
        case deviceLastUsed
        case deviceOffline
        case thisDevice
        case freeDeviceButton
        case freeDeviceLabel
        case freeing
        case wrongKeyTitle
        case wrongKeyMessage
        case revokedTitle
        case revokedMessage
        case expiredTitle
        case expiredMessage
        case offlineTitle
        case offlineMessage
        case configurationTitle
        case configurationMessage
        case untrustedTitle
        case untrustedMessage
        case failedTitle
        case retryButton
        case editKeyButton
        case renewButton
        case activateOfflineButton
        case contactSupportButton
        case buyButton
        case upgradeButton
        case restoreButton
        case restoring
        case offlineIntro
        case offlineStepSave
        case offlineStepPortal
        case offlineStepImport
        case saveRequestButton
        case importResponseButton
        case offlineRequestFileName
        case lostKeyButton
        case lostKeyTitle
        case lostKeyMessage
        case emailLabel
        case emailInvalid
        case sendButton
        case sending
        case lostKeySent
        case waitingForPurchase
        case purchaseArrived
        case purchaseNotYet
        case checkAgainButton
        case summaryTitle
        case summaryKey
        case summaryLicensee
        case summaryType
        case summaryExpires
        case summaryNeverExpires
        case summaryUpdatesUntil
        case summaryDevices
        case devicesInUse
        case deactivateThisDevice
        case deactivated
        case stateLicensed
        case stateTrial
        case stateLimited
        case stateFreeTier
        case stateExpired
        case stateInvalid
        case trialOneDayLeft
        case trialDaysLeft
        case trialOver
        case enterKeyButton

        /// The English text, compiled in.
        public var english: String {
            switch self {
        case .activateTitle: "Activate %@"
        case .keyFieldLabel: "License key"
        case .keyFieldPrompt: "Paste or type your license key"
        case .keyIncomplete: "Keep typing: a license key looks like %@."
        case .keyWrongProduct: "That key is for another product: keys for this app start with %@."
        case .keyInvalid: "A license key has only letters, digits and hyphens."
        case .activateButton: "Activate"
        case .cancelButton: "Cancel"
        case .closeButton: "Close"
        case .activating: "Activating…"
        case .activated: "%@ is activated. Thank you!"
        case .seatsFullTitle: "All %d devices are in use"
        case .seatsFullMessage: "This license is active on as many devices as it allows. Free one you no longer use, and this device takes its place."
        case .deviceLastUsed: "Last used %@"
        case .deviceOffline: "Activated offline"
        case .thisDevice: "This device"
        case .freeDeviceButton: "Free"
        case .freeDeviceLabel: "Free %@"
        case .freeing: "Freeing %@…"
        case .wrongKeyTitle: "That key was not recognized"
        case .wrongKeyMessage: "Check the key in your purchase email and enter it again."
        case .revokedTitle: "This license can no longer be used"
        case .revokedMessage: "It was revoked, suspended or replaced. If you have a newer key, enter it; otherwise contact the seller."
        case .expiredTitle: "This license has expired"
        case .expiredMessage: "Renew it to keep using the app, or enter another key."
        case .offlineTitle: "The license server could not be reached"
        case .offlineMessage: "Check your internet connection and try again, or activate offline with a file."
        case .configurationTitle: "Activation is not set up correctly"
        case .configurationMessage: "This is a problem with the app, not with your key. Please contact the developer."
        case .untrustedTitle: "The answer could not be verified"
        case .untrustedMessage: "Something on this network may be intercepting secure connections. Try again on another network."
        case .failedTitle: "Activation failed"
        case .retryButton: "Try again"
        case .editKeyButton: "Edit the key"
        case .renewButton: "Renew"
        case .activateOfflineButton: "Activate offline…"
        case .contactSupportButton: "Contact support"
        case .buyButton: "Buy a license"
        case .upgradeButton: "Upgrade or renew"
        case .restoreButton: "Restore App Store purchase"
        case .restoring: "Looking for your purchase…"
        case .offlineIntro: "Activate a device that cannot reach the internet in three steps."
        case .offlineStepSave: "1. Save this request, or scan its code, and take it to a device that is online."
        case .offlineStepPortal: "2. There, open the customer portal, give it the request and your key, and download the response."
        case .offlineStepImport: "3. Import the response here."
        case .saveRequestButton: "Save request…"
        case .importResponseButton: "Import response…"
        case .offlineRequestFileName: "activation-request.txt"
        case .lostKeyButton: "Lost your key?"
        case .lostKeyTitle: "Find your license key"
        case .lostKeyMessage: "Enter the email address you bought with, and we will send every key bought with it."
        case .emailLabel: "Email address"
        case .emailInvalid: "That does not look like an email address."
        case .sendButton: "Send"
        case .sending: "Sending…"
        case .lostKeySent: "If any license was bought with %@, its key is on the way. Check your spam folder too."
        case .waitingForPurchase: "Waiting for your purchase to reach the license server…"
        case .purchaseArrived: "Your license is updated."
        case .purchaseNotYet: "The purchase has not arrived yet. It can take a few minutes."
        case .checkAgainButton: "Check again"
        case .summaryTitle: "License"
        case .summaryKey: "License key"
        case .summaryLicensee: "Licensed to"
        case .summaryType: "Kind"
        case .summaryExpires: "Expires"
        case .summaryNeverExpires: "Never"
        case .summaryUpdatesUntil: "Updates until"
        case .summaryDevices: "Devices"
        case .devicesInUse: "%d of %d in use"
        case .deactivateThisDevice: "Deactivate this device"
        case .deactivated: "This device no longer uses the license."
        case .stateLicensed: "Licensed"
        case .stateTrial: "Trial"
        case .stateLimited: "Limited"
        case .stateFreeTier: "Free version"
        case .stateExpired: "Expired"
        case .stateInvalid: "Not valid"
        case .trialOneDayLeft: "1 day left in your trial"
        case .trialDaysLeft: "%d days left in your trial"
        case .trialOver: "Your trial has ended"
        case .enterKeyButton: "Enter license key…"
            }
        }
    }
}
