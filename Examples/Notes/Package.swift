// swift-tools-version:6.0
import PackageDescription

// An example of embedding recsync: a small notes service that keeps its notes in SQLite
// (GRDB) and syncs them through a recsync store with `RecordSyncEngine`.
// `make test` at the top of the repository builds it and runs its tests.
let package = Package(
    name: "recsync-notes-example",
    products: [
        .executable(name: "notes", targets: ["notes"]),
    ],
    dependencies: [
        // The repository this example lives in (named, so the checkout's directory name does not matter).
        .package(name: "recsync", path: "../.."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "NotesService",
            dependencies: [
                .product(name: "RecSyncEngine", package: "recsync"),
                .product(name: "RecSyncEncryption", package: "recsync"),
                .product(name: "RecSyncStore", package: "recsync"),
                .product(name: "RecSyncModel", package: "recsync"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "notes",
            dependencies: ["NotesService", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "NotesServiceTests",
            dependencies: [
                "NotesService",
                // To look at what the store holds, underneath the service.
                .product(name: "RecSyncStore", package: "recsync"),
                .product(name: "RecSyncModel", package: "recsync"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
