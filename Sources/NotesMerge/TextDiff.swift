import CGit2

/// A unified diff of two texts, by libgit2's `git_patch_from_buffers` (git's own xdiff):
/// what `notes diff` prints.
public enum TextDiff {
    private static let libraryReady: Bool = git_libgit2_init() >= 0

    /// The unified diff from `old` to `new`, with `---`/`+++` lines naming them by the
    /// labels; empty when the texts are the same.
    public static func unified(_ old: [UInt8], _ new: [UInt8], oldLabel: String, newLabel: String, context: Int = 3) -> String {
        guard old != new, libraryReady else { return "" }
        var options = git_diff_options()
        git_diff_options_init(&options, UInt32(GIT_DIFF_OPTIONS_VERSION))
        options.context_lines = UInt32(max(0, context))
        // Text even when a line holds a NUL: a note is text to the person reading it.
        options.flags |= GIT_DIFF_FORCE_TEXT.rawValue
        return old.withUnsafeBufferPointer { old in
            new.withUnsafeBufferPointer { new in
                oldLabel.withCString { oldName in
                    newLabel.withCString { newName in
                        var patch: OpaquePointer?
                        guard
                            git_patch_from_buffers(
                                &patch, old.baseAddress, old.count, oldName, new.baseAddress, new.count, newName, &options) == 0,
                            let patch
                        else { return "" }
                        defer { git_patch_free(patch) }
                        var buffer = git_buf()
                        guard git_patch_to_buf(&buffer, patch) == 0 else { return "" }
                        defer { git_buf_dispose(&buffer) }
                        let text = String(decoding: UnsafeRawBufferPointer(start: buffer.ptr, count: buffer.size), as: UTF8.self)
                        return Self.withoutGitHeader(text)
                    }
                }
            }
        }
    }

    /// The patch from its `---` line on, the labels without git's `a/` and `b/` (libgit2
    /// heads a patch with `diff --git` and `index` lines that name no file here).
    static func withoutGitHeader(_ patch: String) -> String {
        var lines = patch.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("--- ") }), start + 1 < lines.count else { return patch }
        lines.removeFirst(start)
        if lines[0].hasPrefix("--- a/") { lines[0] = "--- " + lines[0].dropFirst(6) }
        if lines[1].hasPrefix("+++ b/") { lines[1] = "+++ " + lines[1].dropFirst(6) }
        return lines.joined(separator: "\n")
    }
}
