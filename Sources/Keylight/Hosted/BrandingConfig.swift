import Foundation
#if canImport(SwiftUI)
import SwiftUI
#endif

#if canImport(SwiftUI)
/// A colour for ``BrandingConfig/tintColor``: SwiftUI's `Color` on Apple platforms.
public typealias BrandingColor = Color
#else
/// A colour for ``BrandingConfig/tintColor``: a name, where there is no SwiftUI.
public struct BrandingColor: Hashable, Sendable {
    public let name: String
    public init(name: String) { self.name = name }
    public static let red = Self(name: "red"), orange = Self(name: "orange"), yellow = Self(name: "yellow")
    public static let green = Self(name: "green"), blue = Self(name: "blue"), purple = Self(name: "purple")
    public static let pink = Self(name: "pink"), gray = Self(name: "gray"), accentColor = Self(name: "accentColor")
}
#endif

/// How the app presents its license screens (the hosted SDK's `branding:`). Keylight ships no UI
/// of its own: the app's screens read these from ``LicenseManager/branding``.
public struct BrandingConfig: @unchecked Sendable {
    // @unchecked: SwiftUI's Color is not Sendable on every OS release; it is an immutable value.
    public var appName: String
    public var purchaseURL: URL?
    public var supportEmail: String?
    public var tintColor: BrandingColor?

    public init(appName: String, purchaseURL: URL? = nil, supportEmail: String? = nil, tintColor: BrandingColor? = nil) {
        self.appName = appName
        self.purchaseURL = purchaseURL
        self.supportEmail = supportEmail
        self.tintColor = tintColor
    }
}
