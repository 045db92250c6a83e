/// How the daemon and the mount hand memory back to the system.
public enum ProcessMemory {
    /// Sets glibc's allocator for a process of many threads that passes whole buffers of
    /// up to 16 MiB (64 MiB for a request) around.
    ///
    /// - A fixed mmap threshold of 128 KiB: glibc raises its threshold after each large
    ///   buffer is freed, so later ones come from the heap and stay resident (120 writes
    ///   of up to 12 MiB left the mount at 440 MB after every file was deleted; 62 MB with
    ///   the fixed threshold).
    /// - `arenas`: by default each thread may get an arena of its own (up to eight per
    ///   core), and memory freed in one arena serves no other thread. The mount's FUSE
    ///   workers and the concurrency pool each filled one, so a `grep -r` or an fsstress
    ///   run left freed memory resident in a dozen places.
    /// - `keepFree`: bytes left free at an arena's top before they are given back. A
    ///   small value keeps the resident size close to what is in use; a large one spares
    ///   a busy writer the page faults of memory given back and taken again.
    public static func tune(arenas: Int32, keepFree: Int32) {
        // M_MMAP_THRESHOLD, M_ARENA_MAX and M_TRIM_THRESHOLD of <malloc.h>, which Glibc's
        // module leaves out.
        _ = glibcMallopt(-3, 128 * 1024)
        _ = glibcMallopt(-8, arenas)
        _ = glibcMallopt(-1, keepFree)
    }

    /// Hands back to the kernel every whole free page in the heap, not only those at its
    /// top: after a burst of short-lived buffers (a first mount decodes and drops 50
    /// pages of 2,000 records) the holes they leave between long-lived nodes stay
    /// resident otherwise. It walks the heap once: for after a burst, not for each call.
    public static func giveBackFreePages() {
        _ = glibcMallocTrim(0)
    }
}

/// glibc's `malloc_trim(3)`, of <malloc.h> too.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

/// glibc's `mallopt(3)`: declared here because <malloc.h> is not part of the Glibc module.
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
