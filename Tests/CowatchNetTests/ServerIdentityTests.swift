#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CowatchCore
import CowatchNet
import Testing

@Suite("Server identity")
struct ServerIdentityTests {
    static func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    static func contents(_ path: String) throws -> String {
        String(decoding: try StatePaths.readFile(path) ?? [], as: UTF8.self)
    }

    @Test("loadOrCreate makes a key 0600 and a certificate, and gives the same fingerprint on the next start")
    func createsThenReuses() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.path + "/state/cowatch"
        let first = try ServerIdentity.loadOrCreate(directory: directory, commonName: "alice.example")
        #expect(Self.mode(directory) == 0o700)
        #expect(Self.mode(directory + "/server-key.pem") == 0o600)
        #expect(try Self.contents(directory + "/server-key.pem").hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try Self.contents(directory + "/server-cert.pem").hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(try Self.contents(directory + "/server-cert.pem").hasSuffix("-----END CERTIFICATE-----\n"))
        #expect(try Self.contents(directory + "/server-key.pem").hasSuffix("-----END PRIVATE KEY-----\n"))
        #expect(first.certificateChain.count == 1)
        let certificate = try Self.contents(directory + "/server-cert.pem")

        let second = try ServerIdentity.loadOrCreate(directory: directory, commonName: "alice.example")
        #expect(second.fingerprint == first.fingerprint)
        #expect(try Self.contents(directory + "/server-cert.pem") == certificate)

        // The certificate is valid for about ten years.
        let leaf = try #require(second.certificateChain.first)
        let years = Double(leaf.notValidAfter - leaf.notValidBefore) / (365.25 * 24 * 3600)
        #expect(years > 9.9 && years < 10.1)
        _ = try second.makeServerContext()
    }

    @Test("a lost certificate is remade for the same key; a lost key is refused")
    func partialState() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let first = try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost")
        #expect(unlink(temporary.path + "/server-cert.pem") == 0)
        let remade = try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost")
        #expect(remade.fingerprint == first.fingerprint)

        #expect(unlink(temporary.path + "/server-key.pem") == 0)
        let error = #expect(throws: CowatchError.self) { try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost") }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("server-key.pem does not") == true)
    }

    @Test("a key file others can read is refused")
    func openKeyRefused() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        _ = try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost")
        #expect(chmod(temporary.path + "/server-key.pem", 0o644) == 0)
        let error = #expect(throws: CowatchError.self) { try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost") }
        #expect(error?.code == .unsafePath)
    }

    @Test("load reads given files, chains included, and checks the key belongs to the certificate")
    func loadGivenFiles() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let one = try ServerIdentity.loadOrCreate(directory: temporary.path + "/one", commonName: "localhost")
        let two = try ServerIdentity.loadOrCreate(directory: temporary.path + "/two", commonName: "localhost")
        let loaded = try ServerIdentity.load(
            certificatePath: temporary.path + "/one/server-cert.pem", keyPath: temporary.path + "/one/server-key.pem")
        #expect(loaded.fingerprint == one.fingerprint)

        // A chain: leaf first, another certificate after it; the fingerprint is the leaf's.
        let chain = try Self.contents(temporary.path + "/one/server-cert.pem") + Self.contents(temporary.path + "/two/server-cert.pem")
        try StatePaths.writeAtomically(temporary.path + "/fullchain.pem", contents: Array(chain.utf8))
        let chained = try ServerIdentity.load(certificatePath: temporary.path + "/fullchain.pem", keyPath: temporary.path + "/one/server-key.pem")
        #expect(chained.certificateChain.count == 2)
        #expect(chained.fingerprint == one.fingerprint)

        let mismatch = #expect(throws: CowatchError.self) {
            try ServerIdentity.load(certificatePath: temporary.path + "/one/server-cert.pem", keyPath: temporary.path + "/two/server-key.pem")
        }
        #expect(mismatch?.code == .invalidConfiguration)
        #expect(mismatch?.message.contains("does not belong to the certificate") == true)
        #expect(two.fingerprint != one.fingerprint)
    }

    @Test("missing and invalid files are invalid-configuration naming the file")
    func badFiles() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        _ = try ServerIdentity.loadOrCreate(directory: temporary.path, commonName: "localhost")
        let certificate = temporary.path + "/server-cert.pem"
        let key = temporary.path + "/server-key.pem"
        let garbage = temporary.path + "/garbage.pem"
        try StatePaths.writeAtomically(garbage, contents: Array("not a pem file\n".utf8))

        for (certificatePath, keyPath, named) in [
            (temporary.path + "/missing.pem", key, "missing.pem"),
            (certificate, temporary.path + "/missing-key.pem", "missing-key.pem"),
            (garbage, key, "garbage.pem"),
            (certificate, garbage, "garbage.pem"),
            (key, key, "server-key.pem"),  // a key where the certificate should be
            (temporary.path, key, temporary.path),  // a directory
        ] {
            let error = #expect(throws: CowatchError.self) { try ServerIdentity.load(certificatePath: certificatePath, keyPath: keyPath) }
            #expect(error?.code == .invalidConfiguration, "\(certificatePath) \(keyPath)")
            #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("PRIVATE KEY-----\n") != true)
        }
    }
}
