#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
public import Foundation

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

    // MARK: One mount per replica, and where each mount keeps its replica

    /// Takes the replica at `path` for this process until it exits (an advisory lock on
    /// `path.lock`): two mounts writing one replica would each believe the other's queue
    /// is theirs. Throws with the other mount's process when it is taken.
    public static func claim(_ path: String) throws -> Int32 {
        let lockPath = path + ".lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: lockPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            close(descriptor)
            throw ReplicaError(
                message: "Another mount (process \(holder)) already uses the replica \(path). Unmount it first (`notes unmount DIR`), or give this mount its own --cache-dir.",
                diskFull: false)
        }
        _ = ftruncate(descriptor, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        return descriptor
    }

    /// What a running mount tells `notes status`: where it is and where its replica is.
    public struct Registration: Codable, Sendable {
        public var mountpoint: String
        public var replica: String
        public var account: String
        public var pid: Int32
        public init(mountpoint: String, replica: String, account: String, pid: Int32) {
            self.mountpoint = mountpoint
            self.replica = replica
            self.account = account
            self.pid = pid
        }
    }

    /// The folder of registrations: in the user's own default cache folder, so that
    /// `notes status` finds every mount of this user, whatever `--cache-dir` each has,
    /// and no one else's.
    static func registry(environment: [String: String]) -> String {
        "\(defaultDirectory(environment: environment))/mounts"
    }

    static func registrationPath(_ mountpoint: String, environment: [String: String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in mountpoint.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "\(registry(environment: environment))/\(String(hash, radix: 16)).json"
    }

    /// Records a running mount (replacing what an earlier mount at the same place left).
    public static func register(_ registration: Registration, environment: [String: String] = ProcessInfo.processInfo.environment) {
        let folder = registry(environment: environment)
        try? prepare(folder)
        let path = registrationPath(registration.mountpoint, environment: environment)
        try? ownerOnly(path)
        try? JSONEncoder().encode(registration).write(to: URL(fileURLWithPath: path))
    }

    /// Forgets a mount that is ending.
    public static func unregister(mountpoint: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        try? FileManager.default.removeItem(atPath: registrationPath(mountpoint, environment: environment))
    }

    /// The mounts of this user whose process still runs.
    public static func registrations(environment: [String: String] = ProcessInfo.processInfo.environment) -> [Registration] {
        let folder = registry(environment: environment)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().compactMap { file in
            guard let data = FileManager.default.contents(atPath: "\(folder)/\(file)"),
                let registration = try? JSONDecoder().decode(Registration.self, from: data),
                kill(registration.pid, 0) == 0 || errno == EPERM
            else { return nil }
            return registration
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
