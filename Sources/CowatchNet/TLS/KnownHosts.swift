import CowatchCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Room servers' certificate fingerprints remembered on first use, like ssh's `known_hosts`.
///
/// The file holds one server a line, `HOST:PORT sha256:…` (IPv6 hosts in brackets, hosts
/// lowercased), plus blank lines and `#` comments, which are kept when the file is rewritten:
///
///     # cowatch known_hosts
///     alice.example:7433 sha256:n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg
///     [::1]:7000 sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0
///
/// Every call reads the file afresh; nothing is cached. The file must belong to this user and be
/// private (0600; cowatch writes it so). A malformed line, or two different fingerprints for the
/// same server, is an error rather than skipped: skipping could turn a pinned server into a
/// first use.
///
/// Threading: a value type holding only the path; any thread, any number of instances.
/// `remember` and `forget` lock the containing directory (`flock`) around their
/// read-modify-write, so concurrent writers in this or other processes do not lose lines. All
/// calls block on the file system: not on an event loop.
/// Errors: `invalid-configuration` (malformed file, naming the line), `unsafe-path` (file or
/// directory others could change), `io-error`, and `certificate-mismatch` from `remember` when
/// the server is already remembered with another fingerprint.
public struct KnownHosts: Sendable, Equatable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `STATE_DIRECTORY/known_hosts` (see `StatePaths.defaultDirectory`).
    public static func defaultPath(environment: [String: String]) throws(CowatchError) -> String {
        try StatePaths.defaultDirectory(environment: environment) + "/known_hosts"
    }

    /// The key a server is filed under: `host:port`, host lowercased, IPv6 in brackets.
    public static func key(host: String, port: Int) -> String {
        Invite.authority(host: host.lowercased(), port: port)
    }

    /// The remembered fingerprint of `host:port`, or nil (also when the file does not exist).
    public func lookup(host: String, port: Int) throws(CowatchError) -> CertificateFingerprint? {
        try entries()[Self.key(host: host, port: port)]
    }

    /// Remembers `fingerprint` for `host:port`, rewriting the file atomically (mode 0600) and
    /// creating its directory (0700) if needed. Remembering the same fingerprint again does
    /// nothing; a different one throws `certificate-mismatch` (remove the line, or call `forget`,
    /// to accept a changed server).
    /// Returns true when the key was not remembered before (a first trust, worth telling).
    @discardableResult
    public func remember(host: String, port: Int, fingerprint: CertificateFingerprint) throws(CowatchError) -> Bool {
        let key = Self.key(host: host, port: port)
        return try withDirectoryLock { () throws(CowatchError) -> Bool in
            let (lines, entries) = try read()
            if let known = entries[key] {
                guard known.matches(fingerprint) else {
                    throw CowatchError(
                        .certificateMismatch,
                        "\(path) already remembers \(known.text) for \(key), not \(fingerprint.text); if the server really changed its certificate, remove the line for \(key) from \(path)")
                }
                return false
            }
            var text = lines.joined(separator: "\n")
            if lines.isEmpty { text = "# cowatch known_hosts: room servers' certificate fingerprints (HOST:PORT sha256:…)" }
            text += "\n\(key) \(fingerprint.text)\n"
            try StatePaths.writeAtomically(path, contents: Array(text.utf8), mode: 0o600)
            return true
        }
    }

    /// Removes the line for `host:port`; returns whether there was one.
    @discardableResult
    public func forget(host: String, port: Int) throws(CowatchError) -> Bool {
        let key = Self.key(host: host, port: port)
        return try withDirectoryLock { () throws(CowatchError) -> Bool in
            let (lines, entries) = try read()
            guard entries[key] != nil else { return false }
            let kept = lines.filter { Self.parse(line: $0)?.key != key }
            try StatePaths.writeAtomically(path, contents: Array(kept.map { $0 + "\n" }.joined().utf8), mode: 0o600)
            return true
        }
    }

    // MARK: - File

    private func entries() throws(CowatchError) -> [String: CertificateFingerprint] {
        try read().entries
    }

    /// The file's lines (without a final empty one) and its entries.
    private func read() throws(CowatchError) -> (lines: [String], entries: [String: CertificateFingerprint]) {
        guard let bytes = try StatePaths.readFile(path, maxBytes: 4 << 20, requirePrivate: true) else { return ([], [:]) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CowatchError(.invalidConfiguration, "\(path) is not UTF-8 text")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        var entries: [String: CertificateFingerprint] = [:]
        for (index, line) in lines.enumerated() {
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let (key, fingerprint) = Self.parse(line: line) else {
                throw CowatchError(
                    .invalidConfiguration,
                    "\(path) line \(index + 1) is not \"HOST:PORT sha256:…\"; fix or remove it")
            }
            if let earlier = entries[key], !earlier.matches(fingerprint) {
                throw CowatchError(
                    .invalidConfiguration,
                    "\(path) remembers two different fingerprints for \(key) (line \(index + 1) and an earlier one); remove the wrong one")
            }
            entries[key] = fingerprint
        }
        return (lines, entries)
    }

    /// `HOST:PORT sha256:…` (spaces or tabs between, nothing after) to its normalized key and
    /// fingerprint; nil for anything else, comments included.
    static func parse(line: String) -> (key: String, fingerprint: CertificateFingerprint)? {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
        guard fields.count == 2, let fingerprint = CertificateFingerprint(text: String(fields[1])),
            let colon = fields[0].lastIndex(of: ":"), let port = Int(fields[0][fields[0].index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = fields[0][..<colon]
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return nil }
            host = host.dropFirst().dropLast()
        } else if host.contains(":") {
            return nil
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "[" || $0 == "]" || $0 == "#" }) else { return nil }
        return (key(host: String(host), port: port), fingerprint)
    }

    /// Creates the directory if needed (0700, checked), then holds an exclusive `flock` on it
    /// for `body`.
    private func withDirectoryLock<Result>(_ body: () throws(CowatchError) -> Result) throws(CowatchError) -> Result {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        if directory != "/" { try StatePaths.ensureDirectory(directory) }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CowatchError(.ioError, "cannot open \(directory): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw CowatchError(.ioError, "cannot lock \(directory): \(String(cString: strerror(errno)))") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

extension String {
    fileprivate func trimmingSpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...]
    }
}
