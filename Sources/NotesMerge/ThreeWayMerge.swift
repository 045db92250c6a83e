import CGit2

/// Three-way merge of a note's text, by libgit2's `git_merge_file` (the same xdiff merge
/// git runs): the edits both sides made since the version they share, combined when they
/// touch different lines.
public enum ThreeWayMerge {
    public enum Outcome: Equatable, Sendable {
        /// Both sides' edits, combined.
        case merged([UInt8])
        /// The edits overlap; nothing was combined (never markers inside a note).
        case conflict
    }

    /// libgit2 sets up its allocator and thread state once per process.
    private static let libraryReady: Bool = git_libgit2_init() >= 0

    /// Merges `ours` and `theirs`, both descended from `base`. With `markers` (labels for
    /// our side and theirs), overlapping edits come back merged with git's conflict
    /// markers around them instead of as `.conflict`: only for users who ask for that.
    public static func merge(base: [UInt8], ours: [UInt8], theirs: [UInt8], markers: (ours: String, theirs: String)? = nil) -> Outcome {
        if ours == theirs || theirs == base { return .merged(ours) }
        if ours == base { return .merged(theirs) }
        guard libraryReady else { return .conflict }
        return base.withUnsafeBufferPointer { base in
            ours.withUnsafeBufferPointer { ours in
                theirs.withUnsafeBufferPointer { theirs in
                    var ancestorInput = input(base)
                    var oursInput = input(ours)
                    var theirsInput = input(theirs)
                    var options = git_merge_file_options()
                    git_merge_file_options_init(&options, UInt32(GIT_MERGE_FILE_OPTIONS_VERSION))
                    return withLabels(markers) { ourLabel, theirLabel in
                        if markers != nil {
                            options.our_label = ourLabel
                            options.their_label = theirLabel
                            options.flags |= GIT_MERGE_FILE_ACCEPT_CONFLICTS.rawValue
                        }
                        var result = git_merge_file_result()
                        guard git_merge_file(&result, &ancestorInput, &oursInput, &theirsInput, &options) == 0 else { return .conflict }
                        defer { git_merge_file_result_free(&result) }
                        guard result.automergeable != 0 || markers != nil else { return .conflict }
                        guard let pointer = result.ptr else { return .merged([]) }
                        return .merged(pointer.withMemoryRebound(to: UInt8.self, capacity: result.len) { [UInt8](UnsafeBufferPointer(start: $0, count: result.len)) })
                    }
                }
            }
        }
    }

    private static func withLabels(_ labels: (ours: String, theirs: String)?, _ body: (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Outcome) -> Outcome {
        guard let labels else { return body(nil, nil) }
        return labels.ours.withCString { ours in labels.theirs.withCString { theirs in body(ours, theirs) } }
    }

    private static func input(_ bytes: UnsafeBufferPointer<UInt8>) -> git_merge_file_input {
        var input = git_merge_file_input()
        git_merge_file_input_init(&input, UInt32(GIT_MERGE_FILE_INPUT_VERSION))
        // libgit2 wants a pointer even for an empty file.
        input.ptr = bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? UnsafePointer(emptyFile)
        input.size = bytes.count
        return input
    }

    nonisolated(unsafe) private static let emptyFile: UnsafeMutablePointer<CChar> = {
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return pointer
    }()
}
