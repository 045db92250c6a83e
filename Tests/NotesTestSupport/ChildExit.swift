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
        if case .zombie(let status) = state(process.processIdentifier) { return status }
        return nil
    }

    /// Waits, without relying on Foundation alone, until `process` has ended; its status
    /// (-1 when it was reaped and Foundation did not say so within 5 s).
    public static func wait(for process: Process) -> Int32 {
        var goneSince: Date?
        while true {
            if let status = status(of: process) { return status }
            if case .gone = state(process.processIdentifier) {
                // Reaped: Foundation says so in a moment, unless its handler is held back.
                let since = goneSince ?? Date()
                goneSince = since
                if Date().timeIntervalSince(since) > 5 { return -1 }
            }
            usleep(2_000)
        }
    }

    /// Whether the process is gone altogether (reaped).
    public static func isGone(_ process: Process) -> Bool {
        if case .gone = state(process.processIdentifier) { return true }
        return false
    }

    enum State {
        case running
        /// Ended, not reaped yet, with its status.
        case zombie(Int32)
        /// Reaped (by Foundation, which may not have said so yet).
        case gone
    }

    /// The process as the kernel has it: field 3 of /proc/PID/stat is its state, and
    /// field 52 of a zombie its status as waitpid reports it.
    static func state(_ pid: Int32) -> State {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            return FileManager.default.fileExists(atPath: "/proc/\(pid)") ? .running : .gone
        }
        guard let close = stat.lastIndex(of: ")") else { return .running }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z" else { return .running }
        // A process's first thread shows "Z" as soon as it has ended, while its other
        // threads may still be on their way out holding its files (a lock, a listening
        // socket): it has ended when it is the only thread left.
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 1
        guard threads <= 1 else { return .running }
        guard fields.count > 49, let raw = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return .zombie(-1) }
        return .zombie(raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
    }

    /// Whether the first thread of `pid` has ended (the others may still be ending).
    public static func leaderEnded(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].split(separator: " ").first == "Z"
    }

    /// Each thread of `pid` with its state, what it waits in (`wchan`) and its kernel
    /// stack: what a process whose threads do not end is waiting for.
    public static func threads(of pid: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { tid in
            let base = "/proc/\(pid)/task/\(tid)"
            let stat = (try? String(contentsOfFile: "\(base)/stat", encoding: .utf8)) ?? ""
            let state = stat.lastIndex(of: ")").map { stat[stat.index(after: $0)...].split(separator: " ").first.map(String.init) ?? "?" } ?? "?"
            let name = ((try? String(contentsOfFile: "\(base)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let wchan = (try? String(contentsOfFile: "\(base)/wchan", encoding: .utf8)) ?? ""
            let stack = ((try? String(contentsOfFile: "\(base)/stack", encoding: .utf8)) ?? "").split(separator: "\n").prefix(8).joined(separator: " < ")
            return "\(tid) \(name) \(state) in \(wchan.isEmpty ? "-" : wchan) [\(stack)]"
        }.joined(separator: "; ")
    }

    /// Every thread's stack of a live process, from gdb (when installed), for a report of
    /// a process that does not end.
    public static func stacks(of pid: Int32) -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "(no gdb to show its stacks)" }
        let run = Shell.run("timeout 60 /usr/bin/gdb -p \(pid) -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)'")
        return run.stdout.isEmpty ? "(gdb showed nothing)" : String(run.stdout.suffix(12_000))
    }
}
