/// How the daemon and the mount hand memory back to the system.
public enum ProcessMemory {
    /// Notes and files pass through both processes as whole buffers of up to 16 MiB (64
    /// MiB for a request). glibc raises its mmap threshold after each such buffer is
    /// freed, so later ones come from the heap and stay resident: 120 writes of up to
    /// 12 MiB left the mount at 440 MB after every file was deleted. A fixed threshold
    /// (which also stops the raising) hands each large buffer back on free: 62 MB in the
    /// same run.
    public static func returnLargeBuffersToTheSystem() {
        // M_MMAP_THRESHOLD and M_TRIM_THRESHOLD of <malloc.h>, which Glibc's module leaves out.
        _ = glibcMallopt(-3, 128 * 1024)
        _ = glibcMallopt(-1, 128 * 1024)
    }
}

/// glibc's `mallopt(3)`: declared here because <malloc.h> is not part of the Glibc module.
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
