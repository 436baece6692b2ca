// `import KeylightSDK`, as the hosted service's Swift SDK is imported, brings in the whole SDK
// and the key types its configuration takes (swift-crypto's, which on Apple platforms are
// CryptoKit's own, so code that imports CryptoKit for them keeps compiling).
@_exported import Crypto
@_exported import Keylight
@_exported import KeylightCore

/// The hosted SDK's name for ``Keylight/SignatureCheck``. Renamed in Keylight 2.0 because StoreKit
/// has a `VerificationResult` of its own: a file that imports both cannot use this name.
@available(*, deprecated, renamed: "SignatureCheck")
public typealias VerificationResult = SignatureCheck
