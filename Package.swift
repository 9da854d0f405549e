// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "recsync",
    products: [
        .library(name: "RecSyncModel", targets: ["RecSyncModel"]),
        .library(name: "RecSyncStore", targets: ["RecSyncStore"]),
        .library(name: "RecSyncSystem", targets: ["RecSyncSystem"]),
        .library(name: "RecSyncWorkspace", targets: ["RecSyncWorkspace"]),
        .library(name: "RecSyncEngine", targets: ["RecSyncEngine"]),
        .library(name: "RecSyncEncryption", targets: ["RecSyncEncryption"]),
        .library(name: "RecSyncSubscriptions", targets: ["RecSyncSubscriptions"]),
        .executable(name: "recsync", targets: ["recsync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `make docs`: DocC for the library products (swift package generate-documentation).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // `recsync import`/`export` of CSV files.
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibGit2",
            pkgConfig: "libgit2",
            providers: [.apt(["libgit2-dev"])]
        ),
        // libgit2's TCP connections through a stream of ours, with connect and idle time limits;
        // and the check of certificates for IP addresses, with mbedTLS (libgit2's TLS library
        // here: Debian's libgit2-dev depends on libmbedtls-dev).
        .target(
            name: "CRecSyncNet", dependencies: ["CLibGit2"],
            linkerSettings: [.linkedLibrary("mbedx509"), .linkedLibrary("mbedcrypto")]),
        .target(
            name: "RecSyncGit",
            dependencies: ["CLibGit2", "CRecSyncSys", "CRecSyncNet", "RecSyncModel", "RecSyncSystem", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Crypto: the SHA-256 that names a zone ref whose name is too long for git (RefNames).
        .target(name: "RecSyncModel", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "RecSyncStore", dependencies: ["RecSyncModel", "RecSyncGit", "RecSyncSystem", "CRecSyncSys"]),
        .target(name: "CRecSyncSys"),
        // The one system-call and durable-write layer: EINTR retried, errno and the call's name
        // kept, temp -> fsync -> rename -> fsync of the directory, paths confined to a root.
        .target(name: "RecSyncSystem", dependencies: ["RecSyncModel", "CRecSyncSys", .product(name: "Crypto", package: "swift-crypto")]),
        .target(
            name: "RecSyncWorkspace",
            dependencies: ["RecSyncModel", "RecSyncSystem", "CRecSyncSys", .product(name: "CSV", package: "CSV.swift")]
        ),
        // Committing a workspace into its own git repository (`pull --commit`).
        .target(name: "RecSyncSnapshots", dependencies: ["RecSyncModel", "RecSyncGit", "RecSyncSystem", "RecSyncWorkspace"]),
        .target(
            name: "RecSyncEngine",
            dependencies: ["RecSyncModel", "RecSyncStore", "RecSyncWorkspace", "RecSyncSnapshots"]
        ),
        // Durable subscriptions of a workspace: notifications of what changed on the store
        // since each subscription's cursor, and the watch loop that pulls and delivers them.
        .target(
            name: "RecSyncSubscriptions",
            dependencies: ["RecSyncModel", "RecSyncStore", "RecSyncSystem", "RecSyncWorkspace", "RecSyncEngine", "CRecSyncSys"]
        ),
        // Encrypted zones: a store decorator that seals fields on the client (X25519, HKDF and
        // ChaChaPoly), the user's key files, and `recsync keys`. Any client of a store, the
        // engine included, gets encryption by wrapping the store in it.
        .target(
            name: "RecSyncEncryption",
            dependencies: ["RecSyncModel", "RecSyncStore", "RecSyncSystem", "RecSyncWorkspace", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "RecSyncCLI",
            dependencies: [
                "RecSyncModel", "RecSyncStore", "RecSyncSystem", "RecSyncWorkspace", "RecSyncEngine", "RecSyncEncryption", "RecSyncSubscriptions",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "recsync", dependencies: ["RecSyncCLI"]),
        .target(name: "RecSyncTestSupport", dependencies: ["RecSyncModel", "RecSyncStore", "RecSyncSystem", "RecSyncWorkspace", "CRecSyncSys"]),
        // Swift Testing traits the test targets share (`.ownThreads`); links the Testing library,
        // so it stays out of RecSyncTestSupport, which the fuzz and bench executables use.
        .target(name: "RecSyncTestTraits"),
        // Workspaces synced with an in-memory store, for the tests of the engine's clients
        // (RecSyncEngineTests, RecSyncSubscriptionsTests); links the Testing library too.
        .target(
            name: "RecSyncEngineFixtures",
            dependencies: ["RecSyncEngine", "RecSyncModel", "RecSyncStore", "RecSyncWorkspace", "RecSyncTestSupport"]
        ),
        // `make fuzz`: the decoders of untrusted bytes under libFuzzer (built with
        // -sanitize=fuzzer and -DRECSYNC_LIBFUZZER); a plain build is a seeded mutation loop.
        .executableTarget(name: "recsync-fuzz", dependencies: ["RecSyncTestSupport"]),
        // A small writer process used by the multi-process concurrency tests.
        .executableTarget(name: "recsync-store-writer", dependencies: ["RecSyncStore", "RecSyncModel", "RecSyncTestSupport"]),
        // `make bench` and Benchmarks/run.sh: store-level measurements and test stores.
        .executableTarget(name: "recsync-bench", dependencies: ["RecSyncStore", "RecSyncModel", "RecSyncEngine", "RecSyncWorkspace", "RecSyncTestSupport"]),
        .testTarget(name: "RecSyncModelTests", dependencies: ["RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits"]),
        .testTarget(name: "RecSyncGitTests", dependencies: ["RecSyncGit", "RecSyncTestSupport", "RecSyncTestTraits"]),
        .testTarget(name: "RecSyncSnapshotsTests", dependencies: ["RecSyncSnapshots", "RecSyncWorkspace", "RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits"]),
        .testTarget(name: "RecSyncSystemTests", dependencies: ["RecSyncSystem", "RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits"]),
        .testTarget(name: "RecSyncWorkspaceTests", dependencies: ["RecSyncWorkspace", "RecSyncSystem", "RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits"]),
        .testTarget(
            name: "RecSyncEngineTests",
            dependencies: [
                "RecSyncEngine", "RecSyncEncryption", "RecSyncSubscriptions", "RecSyncWorkspace", "RecSyncStore", "RecSyncModel",
                "RecSyncSystem", "RecSyncTestSupport", "RecSyncTestTraits", "RecSyncEngineFixtures",
            ]
        ),
        .testTarget(
            name: "RecSyncSubscriptionsTests",
            dependencies: [
                "RecSyncSubscriptions", "RecSyncEngine", "RecSyncWorkspace", "RecSyncStore", "RecSyncModel",
                "RecSyncSystem", "RecSyncTestSupport", "RecSyncTestTraits", "RecSyncEngineFixtures",
            ]
        ),
        .testTarget(
            name: "RecSyncEncryptionTests",
            dependencies: [
                "RecSyncEncryption", "RecSyncWorkspace", "RecSyncStore", "RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "RecSyncCLITests",
            dependencies: ["RecSyncCLI", "RecSyncStore", "RecSyncModel", "RecSyncTestSupport", "RecSyncTestTraits", "recsync"],
            // Help snapshots, read from the source tree (re-record with RECORD_SNAPSHOTS=1).
            exclude: ["Snapshots"]
        ),
        .testTarget(
            name: "RecSyncStoreTests",
            dependencies: ["RecSyncStore", "RecSyncModel", "RecSyncGit", "RecSyncTestSupport", "RecSyncTestTraits", "recsync-store-writer"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
