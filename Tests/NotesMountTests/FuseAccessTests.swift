import Foundation
import NotesFS
import Testing

/// A refused mount says what is missing and how to fix it.
struct FuseAccessTests {
    static let usable = FuseAccess(
        deviceExists: true, deviceOpens: true, deviceMode: "crw-rw-rw-", deviceGroup: "root", fusermountExists: true, fusermountIsSetUID: true, isRoot: false)

    @Test func eachMissingPieceIsNamedWithItsFix() {
        var noDevice = Self.usable
        noDevice.deviceExists = false
        #expect(noDevice.explain(errno: ENOENT, mountpoint: "/home/bob/Notes").contains("sudo modprobe fuse"))

        var closed = Self.usable
        closed.deviceOpens = false
        closed.deviceMode = "crw-rw----"
        closed.deviceGroup = "fuse"
        let message = closed.explain(errno: EACCES, mountpoint: "/home/bob/Notes")
        #expect(message.hasPrefix("Cannot mount at /home/bob/Notes: Permission denied."), "\(message)")
        #expect(message.contains("(crw-rw---- (group fuse))") && message.contains("sudo usermod -aG fuse $USER"), "\(message)")

        var noHelper = Self.usable
        noHelper.fusermountExists = false
        #expect(noHelper.explain(errno: EPERM, mountpoint: "/m").contains("sudo apt install fuse3"))
        var plainHelper = Self.usable
        plainHelper.fusermountIsSetUID = false
        #expect(plainHelper.explain(errno: EPERM, mountpoint: "/m").contains("-rwsr-xr-x"))
        // root mounts without the helper.
        plainHelper.isRoot = true
        #expect(!plainHelper.explain(errno: EPERM, mountpoint: "/m").contains("fusermount3 is"))
    }

    @Test func thisMachineIsReadAsItIs() throws {
        let missing = FuseAccess.current(device: "/dev/notes-no-such-device")
        #expect(!missing.deviceExists && !missing.deviceOpens)
        let here = FuseAccess.current()
        #expect(here.deviceExists == FileManager.default.fileExists(atPath: "/dev/fuse"))
        if here.deviceExists { #expect(here.deviceMode.hasPrefix("c")) }
    }
}
