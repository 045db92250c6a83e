#if canImport(Glibc)
    import Glibc
#endif
import NotesFS
import NotesReplica

/// The one mapping from replica failures to the errno an editor expects (the file model
/// answers everything else with errno values directly; the daemon is never waited on).
enum Errno {
    static func of(_ error: ReplicaError) -> FileSystemError {
        error.diskFull ? FileSystemError(ENOSPC) : FileSystemError(EIO)
    }
}
