// swift-tools-version: 6.1
import PackageDescription

// The package apps add: the SDK and what it shares with the server, depending on swift-crypto
// (and its swift-asn1) alone. The server, the CLI and the benchmarks are a package of their own
// in Server/, which depends on this one by path, so an app never resolves any of theirs.
let package = Package(
    name: "Keylight",
    defaultLocalization: "en",
    // The hosted SDK's floor (macOS 13, iOS 16), so an app that moves to Keylight loses no users.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "Keylight", targets: ["Keylight"]),
        .library(name: "KeylightCore", targets: ["KeylightCore"]),
        .library(name: "KeylightTrust", targets: ["KeylightTrust"]),
        // The hosted service's Swift SDK is imported as `KeylightSDK`: the same SDK under that name.
        .library(name: "KeylightSDK", targets: ["KeylightSDK"]),
        // The QR encoder, shared by device trust and the server's dashboard.
        .library(name: "KeylightQR", targets: ["KeylightQR"]),
        // The license window: activation, seats, offline, lost key, purchase, summary, trial
        // banner. Models in plain Swift (tested on Linux), thin SwiftUI and AppKit views over
        // them. Apart from the SDK: an app that draws its own screens does not link it.
        .library(name: "KeylightUI", targets: ["KeylightUI"]),
        // Signing: leases, configs, response and webhook signatures, signing-key files. The
        // server's (a product only so the server package can use it); apps verify, never sign,
        // and never import it.
        .library(name: "KeylightSigning", targets: ["KeylightSigning"]),
        // Helpers this repository's own test suites share (seeded mutator, prerequisite gate,
        // child processes), a product only so the server package's tests can use them. Not for
        // apps: left out of the documentation and the sample app.
        .library(name: "KeylightTestSupport", targets: ["KeylightTestSupport"]),
    ],
    traits: [
        .trait(
            name: "URLSessionTransport",
            description: "The SDK's default transport, URLSession. On Linux it comes from FoundationNetworking (libcurl); the server package turns the trait off so its binary links statically and uses its own HTTP client."
        ),
        .default(enabledTraits: ["URLSessionTransport"]),
    ],
    dependencies: [
        // 3.12 and 4.x share the Curve25519/SHA256/HMAC API Keylight uses; the range lets apps
        // that pin either major line embed the SDK.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            // Formats and crypto shared by the SDK and the server.
            name: "KeylightCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // What only a signer needs (the server, the CLI's offline tools, tests' fake servers).
            name: "KeylightSigning",
            dependencies: ["KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // The SDK apps embed: swift-crypto and Foundation only. Its resources are the privacy
            // manifest and the translations of its error texts (English is compiled in: nothing
            // reads the bundle through Bundle.module, whose accessor stops a process without it).
            name: "Keylight",
            dependencies: ["KeylightCore", .product(name: "Crypto", package: "swift-crypto")],
            resources: [.copy("PrivacyInfo.xcprivacy"), .process("Resources")]
        ),
        .target(
            // The SDK's own products alone (the QR code of an offline request): nothing new to resolve.
            name: "KeylightUI",
            dependencies: ["Keylight", "KeylightCore", "KeylightQR"],
            resources: [.process("Resources")]
        ),
        .target(
            // `import KeylightSDK`: re-exports the SDK and adds the hosted SDK's names.
            name: "KeylightSDK",
            dependencies: ["Keylight", "KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // QR codes: encoder, matrix, PNG. Foundation only.
            name: "KeylightQR"
        ),
        .target(
            // Device-to-device trust for apps: pairing by QR invitation. No server code.
            name: "KeylightTrust",
            dependencies: ["KeylightCore", "Keylight", "KeylightQR", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .executableTarget(
            // libFuzzer entry points for the parsers of untrusted bytes; an ordinary build replays
            // the corpus in Fuzz/Corpus (see .ci/fuzz).
            name: "keylight-fuzz",
            dependencies: ["KeylightCore", "KeylightSigning", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "KeylightTestSupport",
            path: "Tests/KeylightTestSupport"
        ),
        .testTarget(
            name: "KeylightCoreTests",
            dependencies: ["KeylightCore", "KeylightSigning", "KeylightTestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "KeylightTrustTests",
            dependencies: ["KeylightTrust", "KeylightTestSupport", "KeylightCore", "KeylightSigning", "Keylight", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "KeylightQRTests",
            dependencies: ["KeylightQR", "KeylightTestSupport"]
        ),
        .testTarget(
            name: "KeylightTests",
            dependencies: ["Keylight", "KeylightCore", "KeylightSigning", "KeylightUI", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            // The hosted SDK's documented examples, compiled as written against `import KeylightSDK`.
            name: "KeylightSDKTests",
            dependencies: ["KeylightSDK"]
        ),
    ]
)
