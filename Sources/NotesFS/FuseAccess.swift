#if canImport(Glibc)
    @preconcurrency import Glibc
#endif
import Foundation

/// Why a mount was refused, in words that say what to do: what this user may do with
/// `/dev/fuse` and `fusermount3`, read after the refusal.
public struct FuseAccess: Sendable, Equatable {
    public var deviceExists: Bool
    /// Whether this process may open the device for reading and writing.
    public var deviceOpens: Bool
    /// The device's mode (`crw-rw-rw-`) and group, for the message.
    public var deviceMode: String
    public var deviceGroup: String?
    public var fusermountExists: Bool
    public var fusermountIsSetUID: Bool
    public var isRoot: Bool

    public init(
        deviceExists: Bool, deviceOpens: Bool, deviceMode: String, deviceGroup: String?, fusermountExists: Bool, fusermountIsSetUID: Bool, isRoot: Bool
    ) {
        self.deviceExists = deviceExists
        self.deviceOpens = deviceOpens
        self.deviceMode = deviceMode
        self.deviceGroup = deviceGroup
        self.fusermountExists = fusermountExists
        self.fusermountIsSetUID = fusermountIsSetUID
        self.isRoot = isRoot
    }

    /// What this machine allows, read now.
    public static func current(device: String = "/dev/fuse", fusermount: String = "/usr/bin/fusermount3") -> FuseAccess {
        var info = stat()
        let exists = stat(device, &info) == 0
        var helper = stat()
        let helperExists = stat(fusermount, &helper) == 0 || stat("/bin/fusermount3", &helper) == 0
        let group = exists ? getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } : nil
        return FuseAccess(
            deviceExists: exists, deviceOpens: exists && access(device, R_OK | W_OK) == 0, deviceMode: exists ? modeString(info.st_mode) : "",
            deviceGroup: group, fusermountExists: helperExists, fusermountIsSetUID: helperExists && helper.st_mode & S_ISUID != 0 && helper.st_uid == 0,
            isRoot: geteuid() == 0)
    }

    /// What went wrong and how to fix it, for a mount at `mountpoint` refused with `errno`.
    public func explain(errno code: Int32, mountpoint: String) -> String {
        let what = "Cannot mount at \(mountpoint): \(String(cString: strerror(code)))."
        if !deviceExists {
            return "\(what) This machine has no /dev/fuse: load the module (`sudo modprobe fuse`), or in a container pass the device (`--device /dev/fuse`)."
        }
        if !deviceOpens {
            let group = deviceGroup.map { " (group \($0))" } ?? ""
            let join = deviceGroup.map { $0 != "root" ? " Add yourself to its group (`sudo usermod -aG \($0) $USER`, then log in again), or" : "" } ?? ""
            return "\(what) You may not open /dev/fuse (\(deviceMode)\(group)).\(join) ask your admin to make it crw-rw-rw- as Debian ships it (`sudo chmod 666 /dev/fuse`)."
        }
        if !isRoot && !fusermountExists {
            return "\(what) fusermount3 is missing: it mounts for users other than root. Install it (`sudo apt install fuse3`)."
        }
        if !isRoot && !fusermountIsSetUID {
            return
                "\(what) fusermount3 is not set-user-ID root, so it cannot mount for you: `ls -l /usr/bin/fusermount3` should show -rwsr-xr-x (fix: `sudo chmod u+s /usr/bin/fusermount3`, or reinstall fuse3)."
        }
        if code == ENOTEMPTY || code == EEXIST {
            return "\(what) The folder is not empty; mount at an empty folder."
        }
        return "\(what) Check that the folder is yours and empty, and that `fusermount3 -V` runs; the mount's log says more."
    }

    static func modeString(_ mode: mode_t) -> String {
        let kind: Character = mode & S_IFMT == S_IFCHR ? "c" : "-"
        let bits: [(mode_t, Character)] = [
            (S_IRUSR, "r"), (S_IWUSR, "w"), (S_IXUSR, "x"), (S_IRGRP, "r"), (S_IWGRP, "w"), (S_IXGRP, "x"), (S_IROTH, "r"), (S_IWOTH, "w"), (S_IXOTH, "x"),
        ]
        return String([kind] + bits.map { mode & $0.0 != 0 ? $0.1 : "-" })
    }
}
