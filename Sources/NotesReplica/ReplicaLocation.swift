#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Foundation

/// Where mounts keep their replicas, spelled once for the mount, `notes status` and
/// the tests: the folder (`$XDG_CACHE_HOME/notes`, else `~/.cache/notes`) and one
/// `<account>.replica.sqlite` in it.
///
/// A replica holds every note the account can read, private and shared: the folder is
/// the owner's only (0700) and its files too (0600), also when an older version made
/// them readable by everyone.
public enum ReplicaLocation {
    static let suffix = ".replica.sqlite"

    /// The default cache folder, from the process's environment.
    public static func defaultDirectory() -> String {
        defaultDirectory(environment: ProcessInfo.processInfo.environment)
    }

    /// The default cache folder for `environment`.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let cache = environment["XDG_CACHE_HOME"], !cache.isEmpty { return "\(cache)/notes" }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return "\(home)/.cache/notes"
    }

    /// The replica file of `account` in `directory`.
    public static func path(in directory: String, account: String) -> String {
        "\(directory)/\(account)\(suffix)"
    }

    /// The accounts whose replicas `directory` holds.
    public static func accounts(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(suffix) }
            .map { String($0.dropLast(suffix.count)) }
            .sorted()
    }

    /// Makes `directory` (and its parents) if missing, and leaves it and every file in it
    /// readable by its owner only.
    public static func prepare(_ directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try ownerOnly(directory, mode: 0o700)
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            try? ownerOnly("\(directory)/\(file)", mode: 0o600)
        }
    }

    /// Creates `path` empty if missing, with `mode`, or sets `mode` on what is there.
    /// SQLite gives a database's `-wal` and `-shm` files the database file's mode, so
    /// making the main file 0600 before SQLite opens it covers all three.
    public static func ownerOnly(_ path: String, mode: UInt32 = 0o600) throws {
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, mode)
        if descriptor < 0 && errno == EISDIR {
            guard chmod(path, mode) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            return
        }
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        guard fchmod(descriptor, mode) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
