#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CowatchCore
import CowatchNet
import Testing

@Suite("known_hosts")
struct KnownHostsTests {
    static let one = CertificateFingerprint(spkiDER: Array("one".utf8))
    static let two = CertificateFingerprint(spkiDER: Array("two".utf8))

    static func text(_ path: String) throws -> String {
        String(decoding: try StatePaths.readFile(path) ?? [], as: UTF8.self)
    }

    @Test("default path is in the state directory")
    func defaultPath() throws {
        #expect(try KnownHosts.defaultPath(environment: ["XDG_STATE_HOME": "/s"]) == "/s/cowatch/known_hosts")
    }

    @Test("remember, look up, file 0600 with one line per server")
    func rememberAndLookUp() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/state/known_hosts")
        #expect(try hosts.lookup(host: "alice.example", port: 7433) == nil)
        try hosts.remember(host: "Alice.Example", port: 7433, fingerprint: Self.one)
        try hosts.remember(host: "::1", port: 7000, fingerprint: Self.two)
        try hosts.remember(host: "alice.example", port: 7433, fingerprint: Self.one)  // again: nothing changes

        #expect(try hosts.lookup(host: "alice.example", port: 7433) == Self.one)
        #expect(try hosts.lookup(host: "ALICE.example", port: 7433) == Self.one)
        #expect(try hosts.lookup(host: "alice.example", port: 7434) == nil)
        #expect(try hosts.lookup(host: "::1", port: 7000) == Self.two)
        var info = stat()
        #expect(stat(hosts.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let lines = try Self.text(hosts.path).split(separator: "\n")
        #expect(lines.filter { !$0.hasPrefix("#") } == ["alice.example:7433 \(Self.one.text)", "[::1]:7000 \(Self.two.text)"])
    }

    @Test("a different fingerprint for a remembered server is certificate-mismatch; forget allows it")
    func changedServer() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/known_hosts")
        try hosts.remember(host: "h", port: 1, fingerprint: Self.one)
        let error = #expect(throws: CowatchError.self) { try hosts.remember(host: "h", port: 1, fingerprint: Self.two) }
        #expect(error?.code == .certificateMismatch)
        #expect(error?.message.contains("remove the line for h:1") == true)
        #expect(try hosts.lookup(host: "h", port: 1) == Self.one)
        #expect(try hosts.forget(host: "h", port: 1))
        #expect(try !hosts.forget(host: "h", port: 1))
        try hosts.remember(host: "h", port: 1, fingerprint: Self.two)
        #expect(try hosts.lookup(host: "h", port: 1) == Self.two)
    }

    @Test("comments and blank lines are kept; hand-written hex and tabs are read")
    func handEdited() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/known_hosts")
        let hex = "sha256:" + Self.one.bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        try StatePaths.writeAtomically(hosts.path, contents: Array("# mine\n\n  # indented comment\nh.example:9\t\(hex)\n".utf8))
        #expect(try hosts.lookup(host: "h.example", port: 9) == Self.one)
        try hosts.remember(host: "g", port: 2, fingerprint: Self.two)
        #expect(try Self.text(hosts.path) == "# mine\n\n  # indented comment\nh.example:9\t\(hex)\ng:2 \(Self.two.text)\n")
    }

    @Test(
        "malformed lines are errors naming the line",
        arguments: ["h:1", "h sha256:x", "h:0 S", "h:99999 S", "::1:7 S", "[::1 S", "h:1 S extra", "h:1 md5:abc"])
    func malformed(line: String) throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/known_hosts")
        let text = "# ok\ng:1 \(Self.one.text)\n" + line.replacing("S", with: Self.two.text) + "\n"
        try StatePaths.writeAtomically(hosts.path, contents: Array(text.utf8))
        let error = #expect(throws: CowatchError.self) { try hosts.lookup(host: "g", port: 1) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("line 3") == true)
    }

    @Test("two fingerprints for one server are an error; a file others can write is unsafe")
    func conflictsAndModes() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/known_hosts")
        try StatePaths.writeAtomically(hosts.path, contents: Array("h:1 \(Self.one.text)\nH:1 \(Self.two.text)\n".utf8))
        #expect(throws: CowatchError(.invalidConfiguration, "")) { try hosts.lookup(host: "x", port: 1) }
        try StatePaths.writeAtomically(hosts.path, contents: Array("h:1 \(Self.one.text)\n".utf8), mode: 0o666)
        #expect(chmod(hosts.path, 0o666) == 0)
        #expect(throws: CowatchError(.unsafePath, "")) { try hosts.lookup(host: "h", port: 1) }
    }

    @Test("concurrent writers lose no line")
    func concurrentWriters() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let hosts = KnownHosts(path: temporary.path + "/known_hosts")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for port in 1...40 {
                group.addTask { try hosts.remember(host: "h", port: port, fingerprint: CertificateFingerprint(spkiDER: [UInt8(port)])) }
            }
            try await group.waitForAll()
        }
        for port in 1...40 {
            #expect(try hosts.lookup(host: "h", port: port) == CertificateFingerprint(spkiDER: [UInt8(port)]))
        }
    }
}
