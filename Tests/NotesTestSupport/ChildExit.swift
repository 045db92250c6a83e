#if canImport(Glibc)
@preconcurrency import Glibc
#endif
public import Foundation

/// Whether a child process has ended, asked of the kernel when Foundation has not yet
/// noticed: Foundation learns of a child's end from a handler that runs on Dispatch's
/// threads, and a test that blocks those threads (a shell command waited for inside a
/// task, beside stress-ng) held it back until the suite deadlocked: `isRunning` stayed
/// true for a notesd that was a zombie, and `waitUntilExit` never returned.
public enum ChildExit {
    /// The exit status (or 128 + signal) of `process` if it has ended, else nil.
    public static func status(of process: Process) -> Int32? {
        if !process.isRunning { return process.terminationStatus }
        return zombieStatus(process.processIdentifier)
    }

    /// Waits, without Foundation, until `process` has ended; its status.
    public static func wait(for process: Process) -> Int32 {
        while true {
            if let status = status(of: process) { return status }
            usleep(2_000)
        }
    }

    /// The status of a child that has ended and not been reaped yet (state `Z`; field 52
    /// of /proc/PID/stat is the status as waitpid reports it).
    static func zombieStatus(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return nil
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z" else { return nil }
        guard fields.count > 49, let raw = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return -1 }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }
}
