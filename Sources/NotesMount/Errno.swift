#if canImport(Glibc)
import Glibc
#endif
import NotesFS
import NotesModel
import NotesReplica

/// The one mapping from errors inside the mount to the errno an editor expects.
enum Errno {
    static func of(_ error: NotesError) -> FileSystemError {
        switch error.code {
        case .permissionFailure, .notAuthenticated: FileSystemError(EACCES)
        case .unknownItem, .zoneNotFound: FileSystemError(ENOENT)
        case .constraintViolation, .alreadyShared: FileSystemError(EEXIST)
        case .folderNotEmpty: FileSystemError(ENOTEMPTY)
        case .limitExceeded: FileSystemError(EFBIG)
        case .invalidArguments: FileSystemError(EINVAL)
        case .serverRecordChanged, .batchRequestFailed, .changeTokenExpired, .requestRateLimited, .serviceUnavailable, .internalError:
            FileSystemError(EIO)
        }
    }

    static func of(_ error: ReplicaError) -> FileSystemError {
        error.diskFull ? FileSystemError(ENOSPC) : FileSystemError(EIO)
    }
}
