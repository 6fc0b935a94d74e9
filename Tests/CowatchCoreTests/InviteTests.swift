import Testing

@testable import CowatchCore

@Suite("Invite links")
struct InviteTests {
    static let fingerprint = CertificateFingerprint(text: "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")!

    @Test("parses a full invite")
    func full() throws {
        let invite = try Invite.parse("cowatch://alice.example:7000/movie-night?secret=open%20sesame&fp=\(Self.fingerprint.text)")
        #expect(invite == Invite(host: "alice.example", port: 7000, room: "movie-night", secret: "open sesame", fingerprint: Self.fingerprint))
        #expect(invite.tls)
    }

    @Test("defaults: port 7433, no secret, no pin, TLS")
    func defaults() throws {
        let invite = try Invite.parse("cowatch://alice.example/r")
        #expect(invite.port == 7433 && invite.port == Invite.defaultPort)
        #expect(invite.secret == nil && invite.fingerprint == nil && invite.tls)
        #expect(invite.text == "cowatch://alice.example:7433/r")
    }

    @Test("IPv4, IPv6 in brackets, uppercase host and scheme, surrounding whitespace")
    func hosts() throws {
        #expect(try Invite.parse("cowatch://192.168.1.20:7000/r").host == "192.168.1.20")
        let v6 = try Invite.parse("cowatch://[::1]:7000/room")
        #expect(v6.host == "::1" && v6.port == 7000)
        #expect(v6.text == "cowatch://[::1]:7000/room")
        #expect(try Invite.parse("cowatch://[2001:db8::8:800:200c:417a]/r").host == "2001:db8::8:800:200c:417a")
        #expect(try Invite.parse("cowatch://[::ffff:192.0.2.1]/r").host == "::ffff:192.0.2.1")
        #expect(try Invite.parse("cowatch://[1:2:3:4:5:6:7:8]/r").port == 7433)
        #expect(try Invite.parse("COWATCH://Alice.Example:1/r").host == "alice.example")
        #expect(try Invite.parse("  cowatch://h:1/r\r\n").room == "r")
    }

    static let oddSecrets = [
        "s", "open sesame", "a&b=c", "100%", "%41", "+plus+", "ünïcödé 🎬", "?#/:@[]", "tab\u{2003}em-space", "~._-", "'\"<>\\",
        String(repeating: "x", count: Invite.maxSecretBytes),
    ]

    @Test("secrets survive text and parse", arguments: oddSecrets)
    func secretRoundTrip(secret: String) throws {
        let invite = Invite(host: "h.example", port: 9, room: "r", secret: secret, fingerprint: Self.fingerprint)
        let text = invite.text
        #expect(!text.contains(" ") && text.unicodeScalars.allSatisfy(\.isASCII))
        #expect(try Invite.parse(text) == invite)
        #expect(try Invite.parse(text).secret == secret)
    }

    @Test("other round trips", arguments: [
        Invite(host: "h", room: "r"),
        Invite(host: "::1", port: 65535, room: "A.b_c-9", secret: "x"),
        Invite(host: "10.0.0.1", port: 1, room: String(repeating: "r", count: 64), tls: false),
        Invite(host: "h", room: "r", secret: "s", tls: false),
    ])
    func roundTrip(invite: Invite) throws {
        #expect(try Invite.parse(invite.text) == invite)
        #expect(try Invite.parse(invite.text).text == invite.text)
    }

    @Test("canonical text: port always, keys in order secret, fp, notls")
    func canonical() throws {
        let invite = try Invite.parse("cowatch://h/r?fp=\(Self.fingerprint.text)&secret=a%2bb")
        #expect(invite.text == "cowatch://h:7433/r?secret=a%2Bb&fp=\(Self.fingerprint.text)")
        #expect(try Invite.parse("cowatch://h/r?notls=1").text == "cowatch://h:7433/r?notls=1")
        #expect(try Invite.parse("cowatch://h/r?fp=sha256%3A\(Self.fingerprint.text.dropFirst(7))").fingerprint == Self.fingerprint)
        #expect(try Invite.parse("cowatch://h/r?fp=sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad").fingerprint == Self.fingerprint)
    }

    @Test("redacted and description hide the secret")
    func redacted() {
        let invite = Invite(host: "h", room: "r", secret: "hunter2", fingerprint: Self.fingerprint)
        #expect(invite.redacted == "cowatch://h:7433/r?secret=…&fp=\(Self.fingerprint.text)")
        #expect(!invite.description.contains("hunter2"))
        #expect(!"\(invite)".contains("hunter2"))
        #expect(Invite(host: "h", room: "r").redacted == "cowatch://h:7433/r")
    }

    /// Each defect, and a word the message must contain.
    static let defects: [(String, String)] = [
        ("", "must start with cowatch://"),
        ("http://h:1/r", "scheme is \"http\""),
        ("cowatch:/h/r", "must start with cowatch://"),
        ("h:7433/r", "must start with cowatch://"),
        ("cowatch://h:1", "names no room"),
        ("cowatch://h:1/", "names no room"),
        ("cowatch://h:1/?secret=x", "names no room"),
        ("cowatch://h:1/a/b", "one path segment"),
        ("cowatch://h:1/.hidden", "room name"),
        ("cowatch://h:1/r%20oom", "room name"),
        ("cowatch://h:1/" + String(repeating: "r", count: 65), "room name"),
        ("cowatch:///r", "names no host"),
        ("cowatch://:1/r", "names no host"),
        ("cowatch://h:/r", "port"),
        ("cowatch://h:0/r", "port"),
        ("cowatch://h:65536/r", "port"),
        ("cowatch://h:-1/r", "port"),
        ("cowatch://h:+80/r", "port"),
        ("cowatch://h:80a/r", "port"),
        ("cowatch://h:000080/r", "port"),
        ("cowatch://::1:80/r", "brackets"),
        ("cowatch://[::1/r", "closing"),
        ("cowatch://[::1]x/r", "after the IPv6"),
        ("cowatch://[fe80::1%25eth0]/r", "zone"),
        ("cowatch://[1:2:3]/r", "not an IPv6"),
        ("cowatch://[1::2::3]/r", "not an IPv6"),
        ("cowatch://[h.example]/r", "not an IPv6"),
        ("cowatch://user@h/r", "user information"),
        ("cowatch://h%41/r", "DNS name"),
        ("cowatch://-h/r", "DNS name"),
        ("cowatch://h/r?secret=", "secret is empty"),
        ("cowatch://h/r?secret=a%2", "percent-encoded"),
        ("cowatch://h/r?secret=a%zz", "percent-encoded"),
        ("cowatch://h/r?secret=%ff%fe", "percent-encoded"),
        ("cowatch://h/r?secret=a%0Ab", "control character"),
        ("cowatch://h/r?secret=" + String(repeating: "x", count: Invite.maxSecretBytes + 1), "longer than"),
        ("cowatch://h/r?secret=a&secret=b", "given twice"),
        ("cowatch://h/r?fp=sha256:abc", "fingerprint"),
        ("cowatch://h/r?fp=" + "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0", "fingerprint"),
        ("cowatch://h/r?notls=0", "notls must be 1"),
        ("cowatch://h/r?notls=1&fp=sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0", "both notls=1"),
        ("cowatch://h/r?colour=blue", "unknown option \"colour\""),
        ("cowatch://h/r?secret", "no '='"),
        ("cowatch://h/r?secret=a&", "empty part"),
        ("cowatch://h/r?secret=a#frag", "fragment"),
        ("cowatch://h/r?secret=a b", "space"),
        ("cowatch://h/r?secret=ä", "non-ASCII"),
        ("cowatch://h/r?secret=a\u{7F}", "control character"),
        ("cowatch://h/r\n?secret=a", "control character"),
        ("cowatch://h/r?secret=" + String(repeating: "x", count: 2100), "longer than 2048"),
        ("cowatch://h/r?alt=", "empty address"),
        ("cowatch://h/r?alt=a:1,,b:2", "empty address"),
        ("cowatch://h/r?alt=a:1,b:2,c:3,d:4,e:5", "more than 4"),
        ("cowatch://h/r?alt=::1:80", "brackets"),
        ("cowatch://h/r?alt=a:0", "port"),
        ("cowatch://h/r?alt=us@a:1", "user information"),
        ("cowatch://h/r?alt=a:1&alt=b:2", "given twice"),
    ]

    @Test("alt= carries more addresses of the server, in order, and round-trips")
    func alternates() throws {
        let invite = try Invite.parse("cowatch://5.5.5.1:7433/movie?alt=[2001:db8::2]:7433,192.168.1.20")
        #expect(invite.host == "5.5.5.1")
        #expect(invite.alternates == [Endpoint(host: "2001:db8::2", port: 7433), Endpoint(host: "192.168.1.20", port: 7433)])
        #expect(invite.text == "cowatch://5.5.5.1:7433/movie?alt=[2001:db8::2]:7433,192.168.1.20:7433")
        #expect(try Invite.parse(invite.text) == invite)
    }

    @Test("refuses each defect with invalid-invite and a reason", arguments: defects)
    func refuses(text: String, reason: String) {
        let error = #expect(throws: CowatchError.self) { try Invite.parse(text) }
        #expect(error?.code == .invalidInvite)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test("error messages never repeat the secret")
    func messagesHideSecret() {
        for text in ["cowatch://h/r?secret=hunter2%0A", "cowatch://h/r?secret=hunter2&secret=hunter2", "cowatch://h/r?secret=hunter2%",
                     "cowatch://h/r?hunter2", "cowatch://h/r?secret=hunter2&notls=1&fp=sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"] {
            do {
                _ = try Invite.parse(text)
                Issue.record("\(text) parsed")
            } catch {
                #expect(!error.message.contains("hunter2"), "\(error.message)")
            }
        }
    }
}
