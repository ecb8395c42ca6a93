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
        .library(name: "HaulAPI", targets: ["HaulAPI"]),
        .library(name: "HaulServer", targets: ["HaulServer"]),
        .library(name: "HaulFleet", targets: ["HaulFleet"]),
        .executable(name: "haul", targets: ["haul"]),
        // haul with the fleet's PostgreSQL store: `haul serve --store postgres://` runs it.
        .executable(name: "haul-fleet", targets: ["haul-fleet"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        // No default traits: FullFoundation would link all of Foundation (its ICU data is 37 MB of
        // the binary) for a date formatter haul never uses; ConfigurationSupport is not used.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // `swift package generate-documentation` (DocC) for Haul, HaulCore and HaulStore; CI runs it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Pure logic: models, the state machine, response checks, names. No NIO, no SQLite.
        .target(name: "HaulCore"),
        // The engine: manager actor, runner, AsyncHTTPClient transport, file writer.
        .target(
            name: "Haul",
            dependencies: [
                "HaulCore",
                "CProcessMemory",
                "CChildProcess",
                "CFileClone",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The manager is a `Service` (its `run()` owns its task group).
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The SQLite store (sqlite-nio bundles SQLite).
        .target(
            name: "HaulStore",
            dependencies: [
                "HaulCore",
                // Only for the manager on SQLite (`DownloadManager+SQLite.swift`): the engine knows
                // its store only through HaulCore's `DownloadStore`.
                "Haul",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The fleet's store: one queue in PostgreSQL shared by several hosts, claims with leases.
        .target(
            name: "HaulFleet",
            dependencies: [
                "HaulCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The store is a `Service`: the daemon's service group runs its pool.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's wire models (downloads, events, errors, requests) and their JSON, shared by
        // the server, aria2's JSON-RPC layer and the CLI. No Hummingbird, no engine.
        .target(name: "HaulAPI", dependencies: ["HaulCore"]),
        // The daemon: HTTP JSON API, aria2 JSON-RPC (HTTP and WebSocket), event stream, metrics
        // and web page over a DownloadManager.
        .target(
            name: "HaulServer",
            dependencies: [
                "Haul",
                "HaulStore",
                "HaulCore",
                "HaulAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // The webhook's client and its HMAC signature.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HaulCommands",
            dependencies: [
                "Haul",
                "HaulStore",
                "HaulCore",
                "HaulAPI",
                "HaulServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // glibc's mallopt(3), which Swift's Glibc module does not show (Haul's ProcessMemory).
        .target(name: "CProcessMemory"),
        .target(name: "CChildProcess"),
        // Linux's FICLONE ioctl (a reflink), which Swift cannot call: ioctl(2) is variadic.
        .target(name: "CFileClone"),
        .executableTarget(name: "haul", dependencies: ["Haul", "HaulCommands"]),
        // Without PostgresNIO, haul links no part of Foundation but FoundationEssentials; this
        // one links both (see HaulServer's FleetOpening).
        .executableTarget(
            name: "haul-fleet",
            dependencies: [
                "Haul", "HaulCommands", "HaulCore", "HaulFleet", "HaulServer",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Shipped test support: fault-injecting HTTP server, deterministic payloads, manual clock.
        .target(
            name: "HaulTesting",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "HaulCoreTests", dependencies: ["HaulCore"]),
        .testTarget(name: "HaulTestingTests", dependencies: ["HaulTesting"]),
        .testTarget(
            name: "HaulStoreTests",
            dependencies: [
                // SQLiteNIO: to write rows as schema 11 did (`LegacyWriter`), for the migration's tests.
                "HaulStore", "HaulCore", .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ]),
        .testTarget(
            // README's and the DocC articles' examples (`Examples/`), compiled and run against a
            // real server; every Swift block of those texts must be their code.
            name: "HaulDocumentationTests",
            dependencies: [
                "Haul", "HaulCore", "HaulStore", "HaulTesting",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HaulFleetTests",
            dependencies: [
                "HaulFleet", "HaulCore", "HaulTesting", "Haul",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HaulCommandsTests",
            dependencies: [
                "HaulCommands", "HaulCore", "HaulAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "HaulServerTests",
            dependencies: [
                "HaulServer", "HaulAPI", "HaulCore", "Haul", "HaulStore", "HaulTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HaulTests",
            dependencies: [
                "Haul", "HaulCore", "HaulStore", "HaulTesting", "CProcessMemory",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HaulEndToEndTests",
            dependencies: [
                // `haul`: the binary the tests run (never imported).
                "HaulStore", "HaulCore", "HaulTesting", "HaulAPI", "HaulServer", "haul", "haul-fleet",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
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

// As Hummingbird: every existential type says `any`, and a file sees only the members of the
// modules it imports itself (not those a dependency happens to import).
for target in package.targets {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("MemberImportVisibility"),
        ]
}
