import Testing

@testable import CowatchCore

@Suite("Room secret files and values")
struct RoomSecretFileTests {
    static let me: UInt32 = 1000

    @Test("a private regular file of ours (or root's) passes", arguments: [0o600, 0o400, 0o700])
    func privateFile(mode: Int) throws {
        try RoomSecretFile.check(.init(isRegularFile: true, mode: UInt32(mode), owner: Self.me), path: "/s", user: Self.me)
        try RoomSecretFile.check(.init(isRegularFile: true, mode: UInt32(mode), owner: 0), path: "/s", user: Self.me)
    }

    @Test("a file others may read or write is unsafe, with the fix in the message", arguments: [0o644, 0o640, 0o604, 0o620, 0o602, 0o666])
    func openFile(mode: Int) {
        do {
            try RoomSecretFile.check(.init(isRegularFile: true, mode: UInt32(mode), owner: Self.me), path: "/s", user: Self.me)
            Issue.record("mode \(String(mode, radix: 8)) passed")
        } catch {
            #expect(error.code == .unsafePath)
            #expect(error.message.contains("chmod 600 /s"), "\(error.message)")
            #expect(error.message.contains(String(mode, radix: 8)))
        }
    }

    @Test("another user's file is unsafe; a directory is not a secret file")
    func ownerAndType() {
        #expect(throws: CowatchError(.unsafePath, "")) {
            try RoomSecretFile.check(.init(isRegularFile: true, mode: 0o600, owner: 1001), path: "/s", user: Self.me)
        }
        #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try RoomSecretFile.check(.init(isRegularFile: false, mode: 0o700, owner: Self.me), path: "/s", user: Self.me)
        }
    }

    @Test("one trailing line end is dropped; the rest is the secret", arguments: [
        ("correct horse\n", "correct horse"), ("correct horse\r\n", "correct horse"), ("correct horse", "correct horse"),
        ("correct horse\n\n", "correct horse\n"),
    ])
    func contents(text: String, secret: String) {
        let value = try? RoomSecretFile.secret(fromContents: Array(text.utf8), path: "/s")
        if secret.contains("\n") {
            #expect(value == nil, "a second line end is a control character")
        } else {
            #expect(value?.text == secret)
        }
    }

    @Test("too short, too long, control characters or not UTF-8: refused without showing the secret", arguments: [
        Array("short\n".utf8), Array(String(repeating: "x", count: 1025).utf8), Array("with\u{7}bell-char".utf8),
        [0xff, 0xfe, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47], Array(String(repeating: "y", count: 5000).utf8),
    ])
    func bad(bytes: [UInt8]) {
        do {
            _ = try RoomSecretFile.secret(fromContents: bytes, path: "/s")
            Issue.record("accepted \(bytes.count) bytes")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("/s"))
            #expect(!error.message.contains("short") && !error.message.contains("xxxx") && !error.message.contains("bell"))
        }
    }

    @Test("a secret value never prints")
    func neverPrints() throws {
        let value = try RoomSecretValue("correct horse battery")
        #expect("\(value)" == "…")
        #expect(String(describing: value) == "…")
        #expect(!String(reflecting: value).contains("horse"))
        var dumped = ""
        dump(value, to: &dumped)
        #expect(!dumped.contains("horse"), "\(dumped)")
        struct Holder { var secret: RoomSecretValue? }
        var held = ""
        dump(Holder(secret: value), to: &held)
        #expect(!held.contains("horse") && !"\(Holder(secret: value))".contains("horse"))
        #expect(value == (try RoomSecretValue("correct horse battery")))
        #expect(value != (try RoomSecretValue("another secret")))
    }
}
