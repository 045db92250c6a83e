#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import CSpawn
import Foundation

/// Runs a child with `posix_spawn` and collects what it prints. Foundation's
/// `Process.run` on this toolchain copies a whole 256-byte name out of each directory
/// entry of `/proc/self/fd`, reading past glibc's buffer when an entry ends a page: the
/// test process crashed with a bad pointer inside `Process.run` now and then (about one
/// full suite in five, which starts shells by the hundred).
enum Spawn {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: Data
    }

    /// Runs `arguments` (the first is the program's path) with exactly `environment`,
    /// in `directory`, input from /dev/null; nil when it could not be started.
    static func run(_ arguments: [String], environment: [String: String], directory: String?) -> Output? {
        var output: [Int32] = [-1, -1]
        var errors: [Int32] = [-1, -1]
        guard pipe2(&output, O_CLOEXEC) == 0 else { return nil }
        guard pipe2(&errors, O_CLOEXEC) == 0 else {
            close(output[0])
            close(output[1])
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // (dup2 leaves the copies open across exec; the pipes' own ends close there.)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        if let directory { posix_spawn_file_actions_addchdir_np(&actions, directory) }
        // A test's threads may block signals (Dispatch's do): the child starts with none
        // blocked and every signal at its default, as from a shell.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(output[1])
        close(errors[1])
        defer {
            close(output[0])
            close(errors[0])
        }
        guard started == 0 else { return nil }

        // Both pipes read as they fill (a child that fills one while we wait on the
        // other would wait for ever).
        var collected = [Data(), Data()]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open[0] || open[1] {
            var fds = [
                pollfd(fd: open[0] ? output[0] : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: open[1] ? errors[0] : -1, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<2 where open[index] && fds[index].revents != 0 {
                let count = read(fds[index].fd, &buffer, buffer.count)
                if count > 0 {
                    collected[index].append(contentsOf: buffer[0..<count])
                } else if count == 0 || errno != EINTR {
                    open[index] = false
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return Output(status: -1, stdout: collected[0], stderr: collected[1]) }
        }
        // As a shell says it: the exit code, or 128 + the signal that ended it.
        let signal = status & 0x7f
        return Output(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, stdout: collected[0], stderr: collected[1])
    }
}
