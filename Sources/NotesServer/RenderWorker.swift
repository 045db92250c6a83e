#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation

/// What the render worker does to itself before it reads a note: notesd starts it with
/// an empty environment (`WorkerRendering`), and the worker closes what it inherited
/// and limits what a note could make it take. A note that finds a bug in cmark-gfm then holds a
/// process that owns no descriptor of notesd's (no database, socket or listener), may
/// not write files, and is stopped at `memoryBytes` of address space, `cpuSeconds` of
/// CPU and a few descriptors. It still runs as notesd's user: what that user may open,
/// it may open (the data directory included), which is why notesd should run as a user
/// of its own (`systemd/notesd.service`).
public enum RenderWorker {
    static let memoryBytes: rlim_t = 1 << 30
    static let cpuSeconds: rlim_t = 30
    static let descriptors: rlim_t = 16

    public static func confine() {
        // Every descriptor past 0, 1 and 2 that came through exec: those are exactly the
        // ones without close-on-exec. (Foundation's Process passes on whatever the parent
        // had open without the flag, such as the pipes of a render starting beside this
        // one; descriptors this process made for itself, NIO's and Dispatch's, carry it.)
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
        for descriptor in open where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 { close(descriptor) }
        }
        // A render is one visitor's heavy work: it gives way to notesd's own threads.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        limit(RLIMIT_AS, memoryBytes)
        limit(RLIMIT_CPU, cpuSeconds)
        limit(RLIMIT_NOFILE, descriptors)
        limit(RLIMIT_FSIZE, 0)
        limit(RLIMIT_CORE, 0)
    }

    private static func limit(_ resource: __rlimit_resource, _ value: rlim_t) {
        var current = rlimit()
        getrlimit(__rlimit_resource_t(resource.rawValue), &current)
        let bounded = min(value, current.rlim_max)
        var next = rlimit(rlim_cur: bounded, rlim_max: bounded)
        setrlimit(__rlimit_resource_t(resource.rawValue), &next)
    }

    /// The worker's whole job: markdown on stdin, `RenderedNote` JSON on stdout.
    public static func serve() {
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let note = RenderedNote.renderHere(String(decoding: input, as: UTF8.self))
        FileHandle.standardOutput.write((try? JSONEncoder().encode(note)) ?? Data())
    }
}
