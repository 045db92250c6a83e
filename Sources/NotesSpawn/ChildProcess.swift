#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import CSpawn

/// A child process started with `posix_spawn`, with pipes to its input and output.
///
/// Foundation's `Process.run` on this toolchain copies the whole 256-byte name of each
/// entry of `/proc/self/fd` and reads past glibc's buffer when an entry ends a page: now
/// and then it crashed the process that started a child. This starts one without
/// reading that folder: the child closes every descriptor past its three standard ones
/// (`closefrom`, as Foundation's children do), starts with no signal blocked and every
/// signal at its default, and the pipes are close-on-exec from the moment they exist, so
/// no other child started at the same time inherits them.
public struct ChildProcess: Sendable {
    public let pid: Int32
    /// The write end of the child's standard input, when asked for (close it to end
    /// the input).
    public let input: Int32?
    /// The read end of the child's standard output, when asked for.
    public let output: Int32?

    public struct Failure: Error, CustomStringConvertible {
        public let errno: Int32
        public var description: String { String(cString: strerror(errno)) }
    }

    /// The read end of the child's standard error, when asked for.
    public let errors: Int32?

    /// Starts `path` with `arguments` (without the program's own name) and exactly
    /// `environment`, in `directory`. What is not piped is /dev/null.
    public static func start(
        _ path: String, arguments: [String], environment: [String: String], pipeInput: Bool = false, pipeOutput: Bool = false, pipeErrors: Bool = false,
        directory: String? = nil
    ) throws(Failure) -> ChildProcess {
        var opened: [Int32] = []
        func pipeEnds() throws(Failure) -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw Failure(errno: errno) }
            opened += ends
            return (ends[0], ends[1])
        }
        var inputPipe: (read: Int32, write: Int32)?
        var outputPipe: (read: Int32, write: Int32)?
        var errorPipe: (read: Int32, write: Int32)?
        do {
            if pipeInput { inputPipe = try pipeEnds() }
            if pipeOutput { outputPipe = try pipeEnds() }
            if pipeErrors { errorPipe = try pipeEnds() }
        } catch {
            for descriptor in opened { close(descriptor) }
            throw error
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let inputPipe { posix_spawn_file_actions_adddup2(&actions, inputPipe.read, 0) } else { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        if let outputPipe { posix_spawn_file_actions_adddup2(&actions, outputPipe.write, 1) } else { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
        if let errorPipe { posix_spawn_file_actions_adddup2(&actions, errorPipe.write, 2) } else { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        if let directory { posix_spawn_file_actions_addchdir_np(&actions, directory) }

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

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        // The child's ends are the child's.
        for end in [inputPipe?.read, outputPipe?.write, errorPipe?.write].compactMap({ $0 }) { close(end) }
        guard started == 0 else {
            for end in [inputPipe?.write, outputPipe?.read, errorPipe?.read].compactMap({ $0 }) { close(end) }
            throw Failure(errno: started)
        }
        return ChildProcess(pid: pid, input: inputPipe?.write, output: outputPipe?.read, errors: errorPipe?.read)
    }

    /// Waits for the child to end: its exit status, or 128 + the signal that ended it.
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Writes all of `bytes` to `descriptor` (through EINTR and short writes); false
    /// when the reader went away.
    public static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += count
        }
        return true
    }

    /// Reads `descriptor` to its end.
    public static func readAll(_ descriptor: Int32) -> [UInt8] {
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                collected.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return collected
            }
        }
    }
}
