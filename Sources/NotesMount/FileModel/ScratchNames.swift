/// Names that editors use for files they never mean as notes: swap and backup files,
/// lock files, write probes, temporaries. They work as files in the mount but live only
/// in its memory and are never uploaded.
enum ScratchNames {
    static func isScratch(_ name: String) -> Bool {
        if name.hasSuffix("~") { return true }  // vim, emacs, gedit backups
        if name.hasPrefix(".#") { return true }  // emacs lock files
        if name.hasPrefix("#") && name.hasSuffix("#") { return true }  // emacs auto-save
        if name.hasPrefix(".~lock.") { return true }  // LibreOffice locks
        if name.hasPrefix(".goutputstream-") { return true }  // GIO (gedit) temporaries
        if name.hasSuffix(".tmp") || name.hasSuffix(".TMP") { return true }
        if isVimSwap(name) { return true }
        if isVimProbe(name) { return true }
        return false
    }

    /// vim's swap files: `.name.swp`, then `.swo`, `.swn`, … down to `.swa`.
    private static func isVimSwap(_ name: String) -> Bool {
        let bytes = Array(name.utf8.suffix(4))
        guard bytes.count == 4 else { return false }
        return bytes[0] == UInt8(ascii: ".") && bytes[1] == UInt8(ascii: "s") && bytes[2] == UInt8(ascii: "w")
            && (UInt8(ascii: "a")...UInt8(ascii: "p")).contains(bytes[3])
    }

    /// vim's check that it may create files in a folder: `4913`, then `5036`, … (steps of 123).
    private static func isVimProbe(_ name: String) -> Bool {
        guard let number = Int(name), number >= 4913 else { return false }
        return (number - 4913) % 123 == 0 && number < 4913 + 123 * 100
    }
}
