import Foundation

/// The memory a process holds.
public enum ProcessMemory {
    /// Resident set size in bytes (`VmRSS` in /proc/PID/status); nil when the process is gone.
    public static func resident(pid: Int32) -> Int? {
        field("VmRSS", pid: pid)
    }

    /// Peak resident set size in bytes (`VmHWM`).
    public static func peakResident(pid: Int32) -> Int? {
        field("VmHWM", pid: pid)
    }

    private static func field(_ name: String, pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
            return Int(digits).map { $0 * 1024 }
        }
        return nil
    }
}
