// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "cowatch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "cowatchd", targets: ["cowatchd"]),
        .executable(name: "cowatch", targets: ["cowatch"]),
        .executable(name: "cowatch-server", targets: ["cowatch-server"]),
        .executable(name: "cowatch-bench", targets: ["cowatch-bench"]),
        .executable(name: "cowatch-load", targets: ["cowatch-load"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // libmpv, and nothing else.
        .systemLibrary(
            name: "CMpv",
            pkgConfig: "mpv",
            providers: [.apt(["libmpv-dev"])]
        ),
        // The pure core: no libmpv, no NIO; time is injected. Crypto is pure computation (room
        // secrets' proofs, session tokens), so it may live here.
        .target(
            name: "CowatchCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // I/O shell around libmpv.
        .target(
            name: "CowatchMpv",
            dependencies: ["CMpv", "CowatchCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // I/O shells on sockets: the control socket and the room network.
        .target(
            name: "CowatchNet",
            dependencies: [
                "CowatchCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Blocking control-socket client shared by the CLI, the benchmark and the tests.
        .target(name: "CowatchClient", dependencies: ["CowatchCore"], swiftSettings: strict),
        // The daemon: composes player, control socket and room into services.
        .target(
            name: "CowatchDaemon",
            dependencies: [
                "CowatchCore", "CowatchMpv", "CowatchNet",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "cowatchd",
            dependencies: ["CowatchDaemon", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "cowatch",
            dependencies: ["CowatchClient", "CowatchCore", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "cowatch-server",
            dependencies: [
                "CowatchNet", "CowatchCore",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Real processes, real media and skew measurement, for integration tests and the benchmark.
        .target(
            name: "CowatchTestSupport", dependencies: ["CowatchClient", "CowatchCore", "CowatchObserver", "CowatchTesting"],
            swiftSettings: strict),
        // What the daemon's logic is tested with: a manual clock and a simulated player (as
        // HummingbirdTesting is to Hummingbird), and the scenario API that runs in process or
        // against real processes (CowatchTestSupport implements it on those).
        .target(name: "CowatchTesting", dependencies: ["CowatchCore", "CowatchMpv"], swiftSettings: strict),
        // The independent observer: reads players through mpv's own IPC (never the daemons) and
        // measures how far apart they are; for the benchmark and the integration tests.
        .target(name: "CowatchObserver", dependencies: ["CowatchClient", "CowatchCore"], swiftSettings: strict),
        .executableTarget(
            name: "cowatch-bench",
            dependencies: [
                "CowatchTestSupport", "CowatchObserver", "CowatchClient", "CowatchCore", "CowatchNet",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Simulated participants for the server benchmark, one process of many.
        .executableTarget(
            name: "cowatch-load",
            dependencies: [
                "CowatchTestSupport", "CowatchObserver", "CowatchClient", "CowatchCore", "CowatchNet",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "CowatchCoreTests", dependencies: ["CowatchCore", "CowatchTestSupport", "CowatchObserver"], swiftSettings: strict),
        // The NIO shells on real sockets: TLS, pins, known_hosts, the cluster's Redis client.
        .testTarget(
            name: "CowatchNetTests",
            dependencies: [
                "CowatchNet", "CowatchCore", "CowatchTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // The daemon's logic on a simulated player, with a real room server in process.
        .testTarget(
            name: "CowatchDaemonTests",
            dependencies: ["CowatchDaemon", "CowatchTesting", "CowatchMpv", "CowatchNet", "CowatchClient", "CowatchCore"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CowatchIntegrationTests",
            dependencies: [
                "CowatchTestSupport", "CowatchTesting", "CowatchObserver", "CowatchClient", "CowatchCore", "CowatchNet",
            ],
            swiftSettings: strict
        ),
    ]
)
