import CFuse
#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation

// The libfuse callbacks. Each is a non-capturing `@convention(c)` closure (libfuse calls
// them on its worker threads; see INTEROP.md for why none may live in main.swift): it
// finds the `FuseMount` through the request's userdata, copies what it needs out of
// libfuse's memory, calls the file model and sends exactly one reply.

/// The mount behind a request. The userdata is the retained `FuseMount` passed to
/// `fuse_session_new`, alive until `destroy`.
private func mountOf(_ request: fuse_req_t?) -> FuseMount {
    Unmanaged<FuseMount>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
}

/// A single path component from the kernel, or the errno to answer: names that are
/// not UTF-8 cannot be notes, and POSIX names stop at 255 bytes.
private func component(_ name: UnsafePointer<CChar>?) -> Result<String, FileSystemError> {
    guard let name, let text = String(validatingCString: name) else { return .failure(FileSystemError(EINVAL)) }
    if strlen(name) > 255 { return .failure(FileSystemError(ENAMETOOLONG)) }
    return .success(text)
}

/// Total: the time comes from the replica (what the server or a `utime` stored), so
/// NaN or a value past Int's range becomes the nearest time a `timespec` can hold.
private func timeSpec(_ seconds: Double) -> timespec {
    guard seconds.isFinite else { return timespec(tv_sec: seconds.isNaN ? 0 : (seconds > 0 ? Int.max : Int.min), tv_nsec: 0) }
    let whole = seconds.rounded(.down)
    guard whole > -9.2e18, whole < 9.2e18 else { return timespec(tv_sec: whole > 0 ? Int.max : Int.min, tv_nsec: 0) }
    // A Double of today's seconds holds about a quarter of a microsecond: to the nearest
    // microsecond, a time set as 0.1 s reads back as 0.1 s, not 0.099999904.
    let micros = Int(((seconds - whole) * 1e6).rounded())
    if micros >= 1_000_000 { return timespec(tv_sec: Int(whole) + 1, tv_nsec: 0) }
    return timespec(tv_sec: Int(whole), tv_nsec: max(0, micros) * 1_000)
}

private func seconds(_ time: timespec) -> Double {
    Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func makeStat(_ attributes: FileAttributes) -> stat {
    var result = stat()
    result.st_ino = UInt(attributes.inode)
    result.st_mode = (attributes.linkTarget != nil ? S_IFLNK : attributes.isDirectory ? S_IFDIR : S_IFREG) | attributes.permissions
    result.st_nlink = UInt(attributes.linkCount)
    result.st_uid = attributes.uid
    result.st_gid = attributes.gid
    result.st_size = Int(attributes.size)
    result.st_blksize = 4096
    result.st_blocks = Int((attributes.size + 511) / 512)
    result.st_mtim = timeSpec(attributes.modified)
    result.st_ctim = timeSpec(attributes.changed)
    result.st_atim = timeSpec(attributes.accessed)
    return result
}

extension FuseMount {
    func entry(_ attributes: FileAttributes) -> fuse_entry_param {
        var entry = fuse_entry_param()
        entry.ino = attributes.inode
        entry.generation = 1
        entry.attr = makeStat(attributes)
        entry.attr_timeout = attributes.volatile ? 0 : options.attributeTimeout
        entry.entry_timeout = attributes.volatile ? 0 : options.entryTimeout
        return entry
    }

    /// Replies with an entry, or caches a negative lookup for ENOENT so that repeated
    /// probes of missing names (editors do many) stay in the kernel.
    func replyEntry(_ request: fuse_req_t?, _ result: Result<FileAttributes, FileSystemError>) {
        switch result {
        case .success(let attributes):
            var entry = entry(attributes)
            fuse_reply_entry(request, &entry)
        case .failure(let error) where error.errno == ENOENT:
            var entry = fuse_entry_param()
            entry.ino = 0
            entry.entry_timeout = options.negativeTimeout
            fuse_reply_entry(request, &entry)
        case .failure(let error):
            fuse_reply_err(request, error.errno)
        }
    }

    func replyDone(_ request: fuse_req_t?, _ body: () throws(FileSystemError) -> Void) {
        do {
            try body()
            fuse_reply_err(request, 0)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    func replyAttributes(_ request: fuse_req_t?, _ body: () throws(FileSystemError) -> FileAttributes) {
        do {
            let attributes = try body()
            var stat = makeStat(attributes)
            fuse_reply_attr(request, &stat, attributes.volatile ? 0 : options.attributeTimeout)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    /// Fills in an open file's info (handle, cache flags) and replies, or the error.
    func replyOpen(_ request: fuse_req_t?, _ info: UnsafeMutablePointer<fuse_file_info>?, _ body: (inout fuse_file_info) throws(FileSystemError) -> Void) {
        guard let info else {
            fuse_reply_err(request, EINVAL)
            return
        }
        do {
            try body(&info.pointee)
            fuse_reply_open(request, info)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    func replyBytes(_ request: fuse_req_t?, size: Int, _ body: () throws(FileSystemError) -> [UInt8]) {
        do {
            let bytes = try body()
            if size == 0 {
                fuse_reply_xattr(request, bytes.count)
            } else if bytes.count > size {
                fuse_reply_err(request, ERANGE)
            } else {
                bytes.withUnsafeBufferPointer { buffer in
                    _ = buffer.withMemoryRebound(to: CChar.self) { fuse_reply_buf(request, $0.baseAddress, $0.count) }
                }
            }
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    /// Pages through an open directory's listing; `plus` hands the kernel each entry's
    /// attributes too, which counts as a lookup of it.
    func replyListing(_ request: fuse_req_t?, handle: UInt64, size: Int, offset: Int, plus: Bool) {
        let entries: Listing
        do {
            entries = try listing(handle)
        } catch {
            fuse_reply_err(request, error.errno)
            return
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(size, 1))
        defer { buffer.deallocate() }
        var used = 0
        var index = max(offset, 0)
        while index < entries.count {
            let item = entries[index]
            // No node for dots, nor for volatile entries: the kernel would make and then
            // drop an inode for each (10,000 of them in a large trash).
            let isDot = item.name == "." || item.name == ".." || item.attributes.volatile
            let needed: Int
            if plus {
                var entry = entry(item.attributes)
                if isDot { entry.ino = 0 }
                needed = fuse_add_direntry_plus(request, buffer + used, size - used, item.name, &entry, off_t(index + 1))
            } else {
                var attributes = makeStat(item.attributes)
                needed = fuse_add_direntry(request, buffer + used, size - used, item.name, &attributes, off_t(index + 1))
            }
            if needed > size - used { break }
            if plus && !isDot { fileSystem.retain(item.attributes.inode) }
            used += needed
            index += 1
        }
        fuse_reply_buf(request, buffer, used)
    }

    func makeOperations() -> fuse_lowlevel_ops {
        var operations = fuse_lowlevel_ops()
        operations.`init` = { _, connection in
            guard let connection else { return }
            // The kernel's caches are the speed of this file system: readdirplus, and pages
            // kept until the model invalidates them. Not the write-back cache: with it the
            // kernel trusts its own size and mtime of a file for good, so a note that grew
            // on another machine would stay cut at its old length here.
            for capability in [NOTES_CAP_READDIRPLUS, NOTES_CAP_EXPLICIT_INVAL_DATA, NOTES_CAP_ATOMIC_O_TRUNC]
            where connection.pointee.capable & capability != 0 {
                connection.pointee.want |= capability
            }
            // Not the automatic kind, which libfuse asks for by default and which takes
            // precedence: it re-checks attributes on reads and drops pages on any mtime change.
            connection.pointee.want &= ~(NOTES_CAP_READDIRPLUS_AUTO | NOTES_CAP_AUTO_INVAL_DATA)
        }
        operations.destroy = { userdata in
            guard let userdata else { return }
            Unmanaged<FuseMount>.fromOpaque(userdata).release()
        }
        operations.lookup = { request, parent, name in
            let mount = mountOf(request)
            mount.replyEntry(
                request,
                component(name).flatMap { name in
                    Result { () throws(FileSystemError) in try mount.fileSystem.lookup(parent: parent, name: name) }
                })
        }
        operations.forget = { request, inode, count in
            mountOf(request).fileSystem.forget(inode, count: count)
            fuse_reply_none(request)
        }
        operations.forget_multi = { request, count, forgets in
            let mount = mountOf(request)
            for index in 0..<count {
                guard let item = forgets?[index] else { continue }
                mount.fileSystem.forget(item.ino, count: item.nlookup)
            }
            fuse_reply_none(request)
        }
        operations.getattr = { request, inode, _ in
            let mount = mountOf(request)
            mount.replyAttributes(request) { () throws(FileSystemError) in try mount.fileSystem.attributes(of: inode) }
        }
        operations.setattr = { request, inode, attributes, toSet, _ in
            let mount = mountOf(request)
            guard let new = attributes?.pointee else {
                fuse_reply_err(request, EINVAL)
                return
            }
            var changes = AttributeChanges()
            if toSet & NOTES_SET_ATTR_MODE != 0 { changes.permissions = new.st_mode & 0o7777 }
            if toSet & NOTES_SET_ATTR_UID != 0 { changes.uid = new.st_uid }
            if toSet & NOTES_SET_ATTR_GID != 0 { changes.gid = new.st_gid }
            if toSet & NOTES_SET_ATTR_SIZE != 0 { changes.size = UInt64(max(new.st_size, 0)) }
            let now = Date().timeIntervalSince1970
            if toSet & NOTES_SET_ATTR_MTIME_NOW != 0 { changes.modified = now } else if toSet & NOTES_SET_ATTR_MTIME != 0 { changes.modified = seconds(new.st_mtim) }
            if toSet & NOTES_SET_ATTR_ATIME_NOW != 0 { changes.accessed = now } else if toSet & NOTES_SET_ATTR_ATIME != 0 { changes.accessed = seconds(new.st_atim) }
            mount.replyAttributes(request) { () throws(FileSystemError) in try mount.fileSystem.setAttributes(of: inode, changes) }
        }
        operations.readlink = { request, inode in
            do throws(FileSystemError) {
                let target = try mountOf(request).fileSystem.readLink(inode)
                fuse_reply_readlink(request, target)
            } catch {
                fuse_reply_err(request, error.errno)
            }
        }
        operations.symlink = { request, _, _, _ in fuse_reply_err(request, EPERM) }
        operations.link = { request, _, _, _ in fuse_reply_err(request, EPERM) }
        operations.mknod = { request, parent, name, mode, _ in
            let mount = mountOf(request)
            guard mode & S_IFMT == S_IFREG else {
                fuse_reply_err(request, EPERM)
                return
            }
            mount.replyEntry(
                request,
                component(name).flatMap { name in
                    Result { () throws(FileSystemError) in
                        let (attributes, handle) = try mount.fileSystem.create(parent: parent, name: name, mode: OpenMode(flags: O_WRONLY | O_EXCL))
                        try mount.fileSystem.flush(attributes.inode, handle: handle)
                        mount.fileSystem.release(attributes.inode, handle: handle)
                        return attributes
                    }
                })
        }
        operations.mkdir = { request, parent, name, _ in
            let mount = mountOf(request)
            mount.replyEntry(
                request,
                component(name).flatMap { name in
                    Result { () throws(FileSystemError) in try mount.fileSystem.makeDirectory(parent: parent, name: name) }
                }.mapError { $0.errno == ENOENT ? FileSystemError(EIO) : $0 })
        }
        operations.unlink = { request, parent, name in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in try mount.fileSystem.unlink(parent: parent, name: component(name).get()) }
        }
        operations.rmdir = { request, parent, name in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in try mount.fileSystem.removeDirectory(parent: parent, name: component(name).get()) }
        }
        operations.rename = { request, parent, name, newParent, newName, flags in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in
                if flags & NOTES_RENAME_EXCHANGE != 0 { throw FileSystemError(EINVAL) }
                try mount.fileSystem.rename(
                    parent: parent, name: component(name).get(), newParent: newParent, newName: component(newName).get(),
                    noReplace: flags & NOTES_RENAME_NOREPLACE != 0)
            }
        }
        operations.create = { request, parent, name, _, info in
            let mount = mountOf(request)
            guard let info else {
                fuse_reply_err(request, EINVAL)
                return
            }
            do throws(FileSystemError) {
                let (attributes, handle) = try mount.fileSystem.create(parent: parent, name: component(name).get(), mode: OpenMode(flags: info.pointee.flags))
                info.pointee.fh = handle
                info.pointee.keep_cache = 1
                // FLUSH on close: close(2) returns once the file is saved (see `open`).
                info.pointee.noflush = 0
                var entry = mount.entry(attributes)
                fuse_reply_create(request, &entry, info)
            } catch {
                fuse_reply_err(request, error.errno)
            }
        }
        operations.open = { request, inode, info in
            let mount = mountOf(request)
            mount.replyOpen(request, info) { (info: inout fuse_file_info) throws(FileSystemError) in
                let mode = OpenMode(flags: info.flags)
                info.fh = try mount.fileSystem.open(inode, mode: mode)
                // Pages stay cached across opens; the model invalidates them on remote changes.
                // A volatile file is read through each time (a log that grows, a version
                // fetched from notesd).
                if (try? mount.fileSystem.attributes(of: inode))?.volatile == true {
                    info.direct_io = 1
                } else {
                    info.keep_cache = 1
                }
                // A handle that may write gets a FLUSH on close, and close(2) returns once
                // the file model has saved it (`FileSystem.flush`): a closed file survives
                // `kill -9` of the mount. RELEASE comes later and asynchronously, so saving
                // only there would let close return before the save. Read-only handles
                // have nothing to save and skip the round trip.
                info.noflush = mode.writes ? 0 : 1
            }
        }
        operations.read = { request, inode, size, offset, info in
            let mount = mountOf(request)
            do throws(FileSystemError) {
                let bytes = try mount.fileSystem.read(inode, handle: info?.pointee.fh ?? 0, offset: Int(offset), size: size)
                bytes.withUnsafeBufferPointer { buffer in
                    _ = buffer.withMemoryRebound(to: CChar.self) { fuse_reply_buf(request, $0.baseAddress, $0.count) }
                }
            } catch {
                fuse_reply_err(request, error.errno)
            }
        }
        operations.write = { request, inode, bytes, size, offset, info in
            let mount = mountOf(request)
            do throws(FileSystemError) {
                let written = try mount.fileSystem.write(
                    inode, handle: info?.pointee.fh ?? 0, offset: Int(offset), bytes: UnsafeRawBufferPointer(start: bytes, count: size))
                fuse_reply_write(request, written)
            } catch {
                fuse_reply_err(request, error.errno)
            }
        }
        operations.flush = { request, inode, info in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in try mount.fileSystem.flush(inode, handle: info?.pointee.fh ?? 0) }
        }
        operations.release = { request, inode, info in
            mountOf(request).fileSystem.release(inode, handle: info?.pointee.fh ?? 0)
            fuse_reply_err(request, 0)
        }
        operations.fsync = { request, inode, _, info in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in try mount.fileSystem.fsync(inode, handle: info?.pointee.fh ?? 0) }
        }
        operations.opendir = { request, inode, info in
            let mount = mountOf(request)
            mount.replyOpen(request, info) { (info: inout fuse_file_info) throws(FileSystemError) in
                let attributes = try mount.fileSystem.attributes(of: inode)
                guard attributes.isDirectory else { throw FileSystemError(ENOTDIR) }
                info.fh = mount.openListing(inode)
                // The kernel may keep the listing; the model invalidates the folder on change.
                if !attributes.volatile {
                    info.cache_readdir = 1
                    info.keep_cache = 1
                }
            }
        }
        operations.readdir = { request, _, size, offset, info in
            mountOf(request).replyListing(request, handle: info?.pointee.fh ?? 0, size: size, offset: Int(offset), plus: false)
        }
        operations.readdirplus = { request, _, size, offset, info in
            mountOf(request).replyListing(request, handle: info?.pointee.fh ?? 0, size: size, offset: Int(offset), plus: true)
        }
        operations.releasedir = { request, _, info in
            mountOf(request).closeListing(info?.pointee.fh ?? 0)
            fuse_reply_err(request, 0)
        }
        operations.fsyncdir = { request, _, _, _ in fuse_reply_err(request, 0) }
        operations.statfs = { request, _ in
            let statistics = mountOf(request).fileSystem.statistics()
            var result = statvfs()
            result.f_bsize = UInt(statistics.blockSize)
            result.f_frsize = UInt(statistics.blockSize)
            result.f_blocks = UInt(statistics.totalBlocks)
            result.f_bfree = UInt(statistics.freeBlocks)
            result.f_bavail = UInt(statistics.freeBlocks)
            result.f_files = UInt(statistics.files)
            result.f_ffree = UInt(statistics.freeFiles)
            result.f_favail = UInt(statistics.freeFiles)
            result.f_namemax = UInt(statistics.maxNameLength)
            fuse_reply_statfs(request, &result)
        }
        operations.getxattr = { request, inode, name, size in
            let mount = mountOf(request)
            mount.replyBytes(request, size: size) { () throws(FileSystemError) in
                guard let name, let text = String(validatingCString: name) else { throw FileSystemError(ENODATA) }
                return try mount.fileSystem.extendedAttribute(of: inode, name: text)
            }
        }
        operations.listxattr = { request, inode, size in
            let mount = mountOf(request)
            mount.replyBytes(request, size: size) { () throws(FileSystemError) in
                try mount.fileSystem.extendedAttributeNames(of: inode).flatMap { Array($0.utf8) + [0] }
            }
        }
        operations.setxattr = { request, inode, name, value, size, _ in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in
                guard let name, let text = String(validatingCString: name) else { throw FileSystemError(EINVAL) }
                let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
                try mount.fileSystem.setExtendedAttribute(of: inode, name: text, value: bytes)
            }
        }
        operations.removexattr = { request, inode, name in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in
                guard let name, let text = String(validatingCString: name) else { throw FileSystemError(EINVAL) }
                try mount.fileSystem.removeExtendedAttribute(of: inode, name: text)
            }
        }
        operations.access = { request, inode, mask in
            let mount = mountOf(request)
            mount.replyDone(request) { () throws(FileSystemError) in try mount.fileSystem.checkAccess(inode, mask: mask) }
        }
        return operations
    }
}
