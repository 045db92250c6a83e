/// Validation of every name that comes from outside: record names, display (file)
/// names, zone names and account names.
///
/// Names become path components in the mount, so they follow POSIX file-name rules:
/// non-empty, at most 255 UTF-8 bytes, no `/`, no NUL, and not `.` or `..`.
public enum Names {
    /// Checks a name that becomes a path component (a record's `name`, a zone name).
    public static func validateComponent(_ name: String, what: String) throws(NotesError) {
        if name.isEmpty {
            throw NotesError(.invalidArguments, "The \(what) is empty; give it a name.")
        }
        let bytes = name.utf8.count
        if bytes > Limits.maxNameBytes {
            throw NotesError(.invalidArguments, "The \(what) is \(bytes) bytes long; the limit is \(Limits.maxNameBytes) bytes.")
        }
        if name.utf8.contains(0) {
            throw NotesError(.invalidArguments, "The \(what) contains a NUL byte, which no file name may hold.")
        }
        if name.utf8.contains(UInt8(ascii: "/")) {
            throw NotesError(.invalidArguments, "The \(what) \"\(name)\" contains '/', which no file name may hold.")
        }
        if name == "." || name == ".." {
            throw NotesError(.invalidArguments, "The \(what) may not be \"\(name)\".")
        }
    }

    /// Checks a name given to a record now (a new one, or a rename): no control characters
    /// (a newline in a file name breaks every script that lists the folder) and no
    /// bidirectional overrides or isolates (they make `evil‮dm.exe` read as `evilexe.md`).
    /// Names stored before this rule stay readable and editable under their name; only
    /// giving a name takes this check.
    public static func validateNewName(_ name: String, what: String) throws(NotesError) {
        try validateComponent(name, what: what)
        for scalar in name.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || value == 0x7F || (0x80...0x9F).contains(value) {
                throw NotesError(
                    .invalidArguments,
                    "The \(what) contains the control character U+\(String(value, radix: 16, uppercase: true).leftPadded(to: 4)); names may not hold control characters (tabs, newlines, escapes)."
                )
            }
            if (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value) || value == 0x200E || value == 0x200F || value == 0x061C {
                throw NotesError(
                    .invalidArguments,
                    "The \(what) contains the bidirectional control U+\(String(value, radix: 16, uppercase: true).leftPadded(to: 4)), which can make a name read as another; remove it."
                )
            }
        }
    }

    /// Checks a token's label: 1 to 255 characters (Unicode scalars, as JSON Schema
    /// counts them) of visible text, shown in lists.
    public static func validateLabel(_ label: String) throws(NotesError) {
        guard !label.isEmpty, label.unicodeScalars.count <= maxLabelCharacters else {
            throw NotesError(.invalidArguments, "A token's label must be 1 to \(maxLabelCharacters) characters long.")
        }
        guard !label.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw NotesError(.invalidArguments, "A token's label may not hold control characters.")
        }
    }

    public static let maxLabelCharacters = 255

    /// Checks an account name: a Unix-like login (letters, digits, `.`, `_`, `-`),
    /// because it appears as `shared/<owner>/` and in share URLs.
    public static func validateAccount(_ name: String) throws(NotesError) {
        guard !name.isEmpty, name.utf8.count <= 64 else {
            throw NotesError(.invalidArguments, "An account name must be 1 to 64 characters long.")
        }
        let allowed = name.unicodeScalars.allSatisfy { s in
            (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "." || s == "_" || s == "-"
        }
        guard allowed, name.first != ".", name.first != "-" else {
            throw NotesError(.invalidArguments, "The account name \"\(name)\" may hold only letters, digits, '.', '_' and '-', and may not start with '.' or '-'.")
        }
    }

    /// Checks an email address just enough to reject obvious mistakes.
    public static func validateEmail(_ email: String) throws(NotesError) {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), email.utf8.count <= 254,
            !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 })
        else {
            throw NotesError(.invalidArguments, "\"\(email)\" is not an email address.")
        }
    }
}

extension String {
    /// `"1F"` as `"001F"`.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
