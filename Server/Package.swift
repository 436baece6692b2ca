// swift-tools-version: 6.1
import PackageDescription

// The server, the `keylight` CLI and the benchmarks. A package of its own so that an app adding
// the repository (the SDK package one folder up) resolves none of these dependencies.
let package = Package(
    name: "KeylightServer",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "KeylightServer", targets: ["KeylightServer"]),
        .executable(name: "keylight", targets: ["KeylightCLI"]),
        .executable(name: "keylight-bench", targets: ["keylight-bench"]),
    ],
    dependencies: [
        // The SDK package: formats, crypto, the SDK (the CLI's client and the end-to-end tests), QR.
        // Without its URLSessionTransport trait: FoundationNetworking (and so libcurl) stays out of
        // the binary, which then links statically; the CLI's client uses the server's HTTP client.
        .package(name: "Keylight", path: "..", traits: []),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
    ],
    targets: [
        // The Swift runtime's global-enqueue hook, reached through the linker (see EventLoopExecutor).
        .target(name: "CKeylightRuntimeHook"),
        .target(
            name: "KeylightServer",
            dependencies: [
                "CKeylightRuntimeHook",
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "KeylightQR", package: "Keylight"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                // SMTP (STARTTLS and TLS): no package here speaks it.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
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
                // TOTP (RFC 6238) for the dashboard's second factor.
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Mustache", package: "swift-mustache"),
                // App Store signed data: the x5c chain to Apple's root (no hand-written X.509).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            // Dashboard templates (each beside the view model it renders) and static files, compiled
            // into the binary (`PackageResources`): the server reads no file of its own at run time,
            // so the one binary is all an operator copies.
            resources: [
                .embedInCode("Dashboard/Pages/layout.mustache"), .embedInCode("Dashboard/Pages/error.mustache"),
                .embedInCode("Dashboard/Account/login.mustache"),
                .embedInCode("Reminders/reminders_unsubscribe.mustache"),
                .embedInCode("Dashboard/Tenants/home.mustache"), .embedInCode("Dashboard/Tenants/tenant.mustache"),
                .embedInCode("Dashboard/Products/product.mustache"), .embedInCode("Dashboard/Insights/insights.mustache"),
                .embedInCode("Dashboard/Licenses/licenses.mustache"), .embedInCode("Portal/account.mustache"), .embedInCode("Dashboard/Licenses/license.mustache"),
                .embedInCode("Dashboard/SigningKeys/signing_keys.mustache"),
                .embedInCode("Dashboard/Audit/audit.mustache"), .embedInCode("Dashboard/Merchants/merchant.mustache"),
                .embedInCode("Dashboard/Mail/mail_settings.mustache"), .embedInCode("Dashboard/Mail/mail_preview.mustache"),
                .embedInCode("Portal/portal_layout.mustache"), .embedInCode("Portal/portal.mustache"),
                .embedInCode("Dashboard/Webhooks/webhooks.mustache"), .embedInCode("Dashboard/Team/team.mustache"), .embedInCode("Dashboard/Team/tokens.mustache"),
                .embedInCode("Dashboard/Releases/releases.mustache"),
                .embedInCode("Dashboard/Account/security.mustache"), .embedInCode("Dashboard/Account/credentials.mustache"),
                .embedInCode("Dashboard/Static/dashboard.css"), .embedInCode("Dashboard/Static/dashboard.js"),
            ]
        ),
        .target(
            // The SDK's transport over AsyncHTTPClient (the CLI's client, end-to-end tests, benchmarks).
            name: "KeylightHTTPTransport",
            dependencies: [
                .product(name: "Keylight", package: "Keylight"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            // The CLI; its product (the binary) is `keylight`. The target is not called `keylight`:
            // on a case-insensitive disk (a Mac's default) it would share a folder with `Keylight`.
            name: "KeylightCLI",
            dependencies: [
                "KeylightServer", "KeylightHTTPTransport",
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "Keylight", package: "Keylight"),
                .product(name: "KeylightTrust", package: "Keylight"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `keylight release publish`: the streamed upload and its SHA-256.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "keylight-bench",
            dependencies: [
                "KeylightServer", "KeylightHTTPTransport",
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "Keylight", package: "Keylight"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            // Live HTTP servers that record requests (webhook receivers, a fake Stripe) for the tests.
            name: "KeylightServerTestSupport",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/KeylightServerTestSupport"
        ),
        .testTarget(
            // The SDK against a live server.
            name: "KeylightEndToEndTests",
            dependencies: [
                "KeylightServer", "KeylightServerTestSupport", "KeylightHTTPTransport",
                .product(name: "Keylight", package: "Keylight"),
                .product(name: "KeylightUI", package: "Keylight"),
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "KeylightTestSupport", package: "Keylight"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "KeylightServerTests",
            dependencies: [
                "KeylightServer",
                "KeylightServerTestSupport",
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "KeylightTestSupport", package: "Keylight"),
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
                "KeylightCLI", "KeylightServer", "KeylightServerTestSupport",
                .product(name: "KeylightCore", package: "Keylight"),
                .product(name: "KeylightSigning", package: "Keylight"),
                .product(name: "KeylightTestSupport", package: "Keylight"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
            ]
        ),
    ]
)
