#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a daemon's control socket lives by default.
public enum ControlSocketPath {
    /// The directory: `$XDG_RUNTIME_DIR/cowatch`, or `/tmp/cowatch-UID` when that variable is unset.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/cowatch"
        }
        return "/tmp/cowatch-\(getuid())"
    }

    /// `DIRECTORY/NAME.sock`.
    public static func defaultPath(name: String, environment: [String: String]) -> String {
        defaultDirectory(environment: environment) + "/\(name).sock"
    }

    /// The login name: `$USER`, else the password database, else "viewer"; made a valid participant name.
    public static func defaultName(environment: [String: String]) -> String {
        var candidate = environment["USER"] ?? ""
        if candidate.isEmpty, let entry = getpwuid(getuid()), let login = entry.pointee.pw_name {
            candidate = String(cString: login)
        }
        let cleaned = String(candidate.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }.prefix(ParticipantName.maxLength))
        return (cleaned.isEmpty || cleaned.hasPrefix(".")) ? "viewer" : cleaned
    }
}
