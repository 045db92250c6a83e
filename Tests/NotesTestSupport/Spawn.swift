#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation
import NotesSpawn

/// Runs a child and collects what it prints, without Foundation's `Process` (see
/// `ChildProcess`: its `run` crashed the test process now and then).
enum Spawn {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: Data
    }

    /// Runs `arguments` (the first is the program's path) with exactly `environment`,
    /// in `directory`, input from /dev/null; nil when it could not be started.
    static func run(_ arguments: [String], environment: [String: String], directory: String?) -> Output? {
        guard
            let child = try? ChildProcess.start(
                arguments[0], arguments: Array(arguments.dropFirst()), environment: environment, pipeOutput: true, pipeErrors: true, directory: directory),
            let output = child.output, let errors = child.errors
        else { return nil }
        defer {
            close(output)
            close(errors)
        }
        // Both pipes read as they fill (a child that fills one while we wait on the
        // other would wait for ever).
        var collected = [Data(), Data()]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open[0] || open[1] {
            var fds = [
                pollfd(fd: open[0] ? output : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: open[1] ? errors : -1, events: Int16(POLLIN), revents: 0),
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
        return Output(status: child.wait(), stdout: collected[0], stderr: collected[1])
    }
}
