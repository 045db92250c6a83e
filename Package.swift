// swift-tools-version: 6.1
import PackageDescription

/// Every target opts into Swift 6 strict concurrency and internal imports by default,
/// so a dependency leaks into our API only where a `public import` says so.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "notes",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "notesd", targets: ["notesd"]),
        .executable(name: "notes", targets: ["notes"]),
        .executable(name: "notes-bench", targets: ["notes-bench"]),
        .executable(name: "notes-fsbench", targets: ["notes-fsbench"]),
        .executable(name: "notes-neighbours", targets: ["notes-neighbours"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        // The record model and CloudKit sharing rules: pure Swift, no I/O.
        .target(
            name: "NotesModel",
            swiftSettings: strictSettings
        ),
        // Bounded work shared fairly: gates that serve waiting callers in turns by account,
        // and the task-local caller that work is charged to.
        .target(
            name: "NotesWork",
            dependencies: ["NotesModel"],
            swiftSettings: strictSettings
        ),
        // What every backend applies beside SQL: token and link-password hashing, counting
        // wrong guesses, link passes, store metrics.
        .target(
            name: "NotesStoreRules",
            dependencies: [
                "NotesModel", "NotesWork",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Search apart from any database: a request read and checked, a hit's place in a
        // mount, and the indexer that takes saved notes into an index, the same for the
        // store's backends and the mount's replica.
        .target(
            name: "NotesSearch",
            dependencies: [
                "NotesModel", "NotesWork", "NotesText",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // The SQLite FTS5 index file that notesd's SQLite store and the mount's replica
        // each keep beside their own file: its schema, its writes, its queries.
        .target(
            name: "NotesSearchSQLite",
            dependencies: [
                "NotesModel", "NotesText", "NotesSearch",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
        // Persistence: the SQLite (GRDB) implementation of `RecordStore`.
        .target(
            name: "NotesStore",
            dependencies: [
                "NotesModel", "NotesStoreRules", "NotesWork", "NotesText", "NotesSearch", "NotesSearchSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API itself, for writing change pages from column buffers.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Persistence on PostgreSQL (postgres-nio): connection pool, versioned migrations,
        // and the same `RecordStore` as the SQLite one.
        .target(
            name: "NotesPostgres",
            dependencies: [
                "NotesModel", "NotesStoreRules", "NotesWork", "NotesText", "NotesSearch",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Moving a team from SQLite to PostgreSQL (`notesd migrate`): a resumable,
        // verified copy of every table.
        .target(
            name: "NotesTransfer",
            dependencies: [
                "NotesModel", "NotesStore", "NotesPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The HTTP API (Hummingbird 2): routes, identity, error mapping, notifications.
        .target(
            name: "NotesServer",
            dependencies: [
                "NotesModel", "NotesWork", "NotesSpawn",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                "NotesExport", "NotesText",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The HTTP client that `notes` (and later the mount) use to talk to `notesd`.
        .target(
            name: "NotesClient",
            dependencies: [
                "NotesModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // libfuse3's low-level API: a module map over a shim header (Debian's libfuse3-dev).
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        // cmark-gfm: GitHub-flavoured Markdown (Debian's libcmark-gfm-dev and -extensions-dev).
        .systemLibrary(name: "CCmarkGFM", pkgConfig: "libcmark-gfm", providers: [.apt(["libcmark-gfm-dev", "libcmark-gfm-extensions-dev"])]),
        // A note's plain text without a parser: its title for listings, the text search
        // indexes. Linear in the bytes, pure Swift.
        .target(
            name: "NotesText",
            swiftSettings: strictSettings
        ),
        // Markdown to HTML pages and static sites; knows nothing of the store or the mount.
        .target(
            name: "NotesExport",
            dependencies: ["CCmarkGFM", "NotesText"],
            swiftSettings: strictSettings
        ),
        // libgit2, for three-way merges of notes edited on both sides (Debian's libgit2-dev).
        .systemLibrary(name: "CGit2", pkgConfig: "libgit2", providers: [.apt(["libgit2-dev"])]),
        // Merging concurrent edits of a note; pure functions over bytes.
        .target(
            name: "NotesMerge",
            dependencies: ["CGit2"],
            swiftSettings: strictSettings
        ),
        // getxattr(2) for the CLI, which learns the record behind a path from the mount.
        .systemLibrary(name: "CXattr"),
        // posix_spawn's GNU extensions, for child processes started without Foundation.
        .systemLibrary(name: "CSpawn"),
        // Child processes (notesd's render worker, the tests' shells) started with
        // posix_spawn rather than Foundation's Process.
        .target(
            name: "NotesSpawn",
            dependencies: ["CSpawn"],
            swiftSettings: strictSettings
        ),
        // The kernel adapter: libfuse callbacks in, `FileSystem` calls out; no notes logic.
        .target(
            name: "NotesFS",
            dependencies: ["CFuse"],
            swiftSettings: strictSettings
        ),
        // The mount's local copy: records, contents and the upload queue in one SQLite file.
        .target(
            name: "NotesReplica",
            dependencies: [
                "NotesModel", "NotesText", "NotesSearch", "NotesSearchSQLite", "NotesWork",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
        // The mount's file model and sync engine: the tree of notes the kernel sees, kept in
        // step with notesd through the replica.
        .target(
            name: "NotesMount",
            dependencies: [
                "NotesModel", "NotesFS", "NotesReplica", "NotesClient", "NotesMerge", "NotesSearch",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "notesd",
            dependencies: [
                "NotesModel", "NotesStore", "NotesPostgres", "NotesServer", "NotesTransfer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "notes",
            dependencies: [
                "NotesModel", "NotesClient", "NotesFS", "NotesMount", "NotesReplica", "NotesExport", "NotesMerge", "NotesSearch", "CXattr",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Throughput against raw GRDB (or postgres-nio, with --database) in the same
        // process: see BENCHMARKS.md.
        .executableTarget(
            name: "notes-bench",
            dependencies: [
                "NotesModel", "NotesClient", "NotesPostgres", "NotesReplica", "NotesSearch", "NotesText",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // One account's heavy use against other accounts' latency: see BENCHMARKS.md.
        .executableTarget(
            name: "notes-neighbours",
            dependencies: [
                "NotesModel", "NotesClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The mount against tmpfs, phase by phase, and save-to-visible latency: see BENCHMARKS.md.
        .executableTarget(
            name: "notes-fsbench",
            dependencies: [
                "NotesModel", "NotesClient", "NotesFS", "NotesSpawn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "NotesExportTests", dependencies: ["NotesExport", "NotesText"], exclude: ["Fixtures"], swiftSettings: strictSettings),
        .testTarget(name: "NotesTextTests", dependencies: ["NotesText"], swiftSettings: strictSettings),
        .testTarget(name: "NotesMergeTests", dependencies: ["NotesMerge"], swiftSettings: strictSettings),
        .testTarget(name: "NotesWorkTests", dependencies: ["NotesModel", "NotesWork"], swiftSettings: strictSettings),
        .testTarget(name: "NotesModelTests", dependencies: ["NotesModel"], swiftSettings: strictSettings),
        .testTarget(
            name: "NotesReplicaTests",
            dependencies: [
                "NotesModel", "NotesReplica", "NotesSearch", "NotesSearchSQLite",
                .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "NotesStoreTests",
            dependencies: [
                "NotesModel", "NotesStore", "NotesStoreRules", "NotesWork", "NotesPostgres", "NotesTransfer", "NotesTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                // (for tests that play an older notesd on PostgreSQL)
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Real notesd and mount processes for the tests of every target that needs them.
        .target(
            name: "NotesTestSupport",
            dependencies: ["NotesModel", "NotesClient", "NotesFS", "NotesSpawn"],
            path: "Tests/NotesTestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NotesMountTests",
            dependencies: ["NotesModel", "NotesClient", "NotesFS", "NotesTestSupport"],
            swiftSettings: strictSettings
        ),
        // Many mounts and the store in one process, driven by a seed: see Simulation.swift.
        .testTarget(
            name: "NotesSimulationTests",
            dependencies: [
                "NotesModel", "NotesStore", "NotesReplica", "NotesMount", "NotesFS", "NotesClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Several notesd on one PostgreSQL database (real processes, a throwaway cluster):
        // events across instances, sharing, kill -9, a dropped listening connection, and
        // concurrent writers and readers on two stores.
        .testTarget(
            name: "NotesClusterTests",
            dependencies: [
                "NotesModel", "NotesClient", "NotesTestSupport", "NotesPostgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NotesServerTests",
            dependencies: [
                "NotesModel", "NotesStore", "NotesServer", "NotesClient", "NotesTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
