import CowatchCore
import Foundation

/// This machine's Tailscale MagicDNS name (`laptop.tailnet-1234.ts.net`), which friends in the
/// same tailnet can use in an invite instead of its 100.x address: asked of the `tailscale`
/// command when it is installed, bounded in time; nil otherwise.
///
/// Threading: any thread (runs a process, at most `deadline` seconds). Errors: none; anything
/// unexpected is nil.
public enum TailscaleName {
    static let deadline = 1.5
    static let candidates = ["/usr/bin/tailscale", "/usr/local/bin/tailscale", "/usr/sbin/tailscale"]

    public static func lookup() -> String? {
        guard let program = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["status", "--self", "--peers=false", "--json"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        guard finished.wait(timeout: .now() + deadline) == .success else {
            process.terminate()
            return nil
        }
        let data = output.fileHandleForReading.readData(ofLength: 256 * 1024)
        return parse(Array(data))
    }

    /// Reads `Self.DNSName` from `tailscale status --json`: a DNS name (letters, digits, `-`,
    /// `.`), the trailing dot dropped; nil for anything else.
    static func parse(_ json: [UInt8]) -> String? {
        guard let value = try? JSONValue.parse(json), let name = value["Self"]?["DNSName"]?.stringValue else { return nil }
        let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
        guard !trimmed.isEmpty, trimmed.utf8.count <= 253, !trimmed.hasPrefix("-"), !trimmed.hasPrefix("."),
            trimmed.unicodeScalars.allSatisfy({ ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "." })
        else { return nil }
        return trimmed.lowercased()
    }
}
