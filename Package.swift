// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Keylight",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "KeylightCore", targets: ["KeylightCore"]),
        .executable(name: "keylight", targets: ["keylight"]),
        .executable(name: "keylight-bench", targets: ["keylight-bench"]),
    ],
    dependencies: [
        // 3.12 and 4.x share the Curve25519/SHA256/HMAC API Keylight uses; the range lets apps
        // that pin either major line embed KeylightCore.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "KeylightCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .executableTarget(
            name: "keylight",
            dependencies: [
                "KeylightCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "keylight-bench",
            dependencies: [
                "KeylightCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "KeylightCoreTests",
            dependencies: ["KeylightCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            // Depends on the executable so `swift test` builds the binary the tests run as a subprocess.
            name: "keylightTests",
            dependencies: ["keylight", "KeylightCore"]
        ),
    ]
)
