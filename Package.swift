// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Haul",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Haul", targets: ["Haul"]),
        .library(name: "HaulCore", targets: ["HaulCore"]),
        .library(name: "HaulStore", targets: ["HaulStore"]),
        .library(name: "HaulTesting", targets: ["HaulTesting"]),
        .library(name: "HaulServer", targets: ["HaulServer"]),
        .executable(name: "haul", targets: ["haul"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // Pure logic: models, the state machine, response checks, names. No NIO, no SQLite.
        .target(name: "HaulCore"),
        // The engine: manager actor, runner, AsyncHTTPClient transport, file writer.
        .target(
            name: "Haul",
            dependencies: [
                "HaulCore",
                "HaulStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The SQLite store (sqlite-nio bundles SQLite).
        .target(
            name: "HaulStore",
            dependencies: [
                "HaulCore",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon: HTTP JSON API, event stream and web page over a DownloadManager.
        .target(
            name: "HaulServer",
            dependencies: [
                "Haul",
                "HaulCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HaulCommands",
            dependencies: [
                "Haul",
                "HaulCore",
                "HaulServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "haul", dependencies: ["HaulCommands"]),
        // Shipped test support: fault-injecting HTTP server, deterministic payloads, manual clock.
        .target(
            name: "HaulTesting",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(name: "HaulCoreTests", dependencies: ["HaulCore"]),
        .testTarget(name: "HaulTestingTests", dependencies: ["HaulTesting"]),
        .testTarget(name: "HaulStoreTests", dependencies: ["HaulStore", "HaulCore"]),
        .testTarget(
            name: "HaulTests",
            dependencies: ["Haul", "HaulCore", "HaulStore", "HaulTesting", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "HaulEndToEndTests",
            dependencies: [
                "HaulStore", "HaulCore", "HaulTesting", "HaulServer", "haul",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)

// A standalone fault-injecting test server for benchmarks (serves a generated payload at /file).
package.targets.append(
    .executableTarget(
        name: "haul-test-server",
        dependencies: ["HaulTesting", .product(name: "NIO", package: "swift-nio")]
    )
)
