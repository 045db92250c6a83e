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
    ///
    /// A child that is gone altogether (reaped, with Foundation not yet told) has ended
    /// too, with its status unknown (-1).
    static func zombieStatus(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            return FileManager.default.fileExists(atPath: "/proc/\(pid)") ? nil : -1
        }
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z" else { return nil }
        guard fields.count > 49, let raw = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return -1 }
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }

    /// Every thread's stack of a live process, from gdb (when installed), for a report of
    /// a process that does not end.
    public static func stacks(of pid: Int32) -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "(no gdb to show its stacks)" }
        let run = Shell.run("timeout 60 /usr/bin/gdb -p \(pid) -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)'")
        return run.stdout.isEmpty ? "(gdb showed nothing)" : String(run.stdout.suffix(12_000))
    }
}
