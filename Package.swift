// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Keylight",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "KeylightCore", targets: ["KeylightCore"]),
        .library(name: "Keylight", targets: ["Keylight"]),
        .library(name: "KeylightTrust", targets: ["KeylightTrust"]),
        .library(name: "KeylightServer", targets: ["KeylightServer"]),
        .executable(name: "keylight", targets: ["KeylightCLI"]),
        .executable(name: "keylight-bench", targets: ["keylight-bench"]),
    ],
    dependencies: [
        // 3.12 and 4.x share the Curve25519/SHA256/HMAC API Keylight uses; the range lets apps
        // that pin either major line embed KeylightCore.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Server only: apps that embed KeylightCore never see these.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .target(
            name: "KeylightCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // The SDK apps embed: swift-crypto and Foundation only.
            name: "Keylight",
            dependencies: ["KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // Device-to-device trust for apps: pairing by QR invitation, QR encoder. No server code.
            name: "KeylightTrust",
            dependencies: ["KeylightCore", "Keylight", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "KeylightServer",
            dependencies: [
                "KeylightCore",
                "KeylightTrust",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // Dashboard templates (each beside the view model it renders; copied to the bundle's
            // top level, where the renderer finds them by name) and static files, read once at start-up.
            resources: [
                .copy("Dashboard/Pages/layout.mustache"), .copy("Dashboard/Pages/error.mustache"),
                .copy("Dashboard/Account/login.mustache"),
                .copy("Dashboard/Tenants/home.mustache"), .copy("Dashboard/Tenants/tenant.mustache"),
                .copy("Dashboard/Products/product.mustache"),
                .copy("Dashboard/Licenses/licenses.mustache"), .copy("Dashboard/Licenses/license.mustache"),
                .copy("Dashboard/SigningKeys/signing_keys.mustache"),
                .copy("Dashboard/Audit/audit.mustache"),
                .copy("Portal/portal_layout.mustache"), .copy("Portal/portal.mustache"),
                .copy("Dashboard/Static"),
            ]
        ),
        .executableTarget(
            // The CLI; its product (the binary) is `keylight`. The target is not called `keylight`:
            // on a case-insensitive disk (a Mac's default) it would share a folder with `Keylight`.
            name: "KeylightCLI",
            dependencies: [
                "KeylightCore",
                "KeylightServer",
                "Keylight",
                "KeylightTrust",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "keylight-bench",
            dependencies: [
                "KeylightCore",
                "Keylight",
                "KeylightServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            // libFuzzer entry points for the parsers of untrusted bytes; an ordinary build replays
            // the corpus in Fuzz/Corpus (see .ci/fuzz).
            name: "keylight-fuzz",
            dependencies: ["KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            // Live HTTP servers that record requests (webhook receivers, a fake Stripe) for the tests.
            name: "KeylightTestSupport",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/KeylightTestSupport"
        ),
        .target(
            // Seeded randomness and the input mutator the fuzz tests of every target share.
            name: "KeylightFuzzSupport",
            path: "Tests/KeylightFuzzSupport"
        ),
        .testTarget(
            name: "KeylightCoreTests",
            dependencies: ["KeylightCore", "KeylightFuzzSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "KeylightTrustTests",
            dependencies: ["KeylightTrust", "KeylightFuzzSupport", "KeylightCore", "Keylight", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "KeylightTests",
            dependencies: ["Keylight", "KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            // The SDK against a live server.
            name: "KeylightEndToEndTests",
            dependencies: ["Keylight", "KeylightServer", "KeylightCore", "KeylightTestSupport", "KeylightFuzzSupport", .product(name: "Logging", package: "swift-log"), .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "KeylightServerTests",
            dependencies: [
                "KeylightServer",
                "KeylightCore",
                "KeylightTestSupport",
                "KeylightFuzzSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            // Depends on the executable so `swift test` builds the binary the tests run as a subprocess.
            name: "KeylightCLITests",
            dependencies: [
                "KeylightCLI", "KeylightCore", "KeylightServer", "KeylightTestSupport", "KeylightFuzzSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ]
)
