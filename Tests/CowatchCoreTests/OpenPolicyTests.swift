import Testing

@testable import CowatchCore

@Suite("What a room may make this player open")
struct OpenPolicyTests {
    static let people = [
        ParticipantInfo(name: "alice", state: "joined", role: .owner),
        ParticipantInfo(name: "olga", state: "joined", role: .operator),
        ParticipantInfo(name: "mo", state: "joined", role: .member),
    ]

    func activity(_ url: String, fallback: String? = nil, by: String? = "mo") -> Activity {
        Activity(id: 1, url: url, title: "film", fallbackURL: fallback, openedBy: by)
    }

    @Test("by default only http and https URLs are opened", arguments: [
        ("https://media.example/a.mkv", true), ("http://127.0.0.1:8000/a.mkv", true), ("HTTPS://x/a", true),
        ("rtsp://cam/stream", false), ("ftp://x/a.mkv", false), ("/home/bob/secret.mkv", false),
        ("file:///etc/passwd", false), ("file:/etc/passwd", false), ("av://lavfi:anullsrc", false),
        ("edl://%20%/etc/passwd", false), ("fd://3", false), ("relative/path.mkv", false), ("C:\\films\\a.mkv", false),
        ("", false), ("://x", false), ("1http://x", false),
    ])
    func defaults(url: String, allowed: Bool) {
        let policy = OpenPolicy()
        #expect(policy.allows(url) == allowed, "\(url)")
        if case .refuse(let error) = policy.decide(activity(url), me: "bob", participants: Self.people) {
            #expect(!allowed, "\(url) refused")
            #expect(error.code == .openRefused)
            #expect(error.message.contains(url.isEmpty ? "not opening" : url))
        } else {
            #expect(allowed, "\(url) opened")
        }
    }

    @Test("--allow-scheme adds schemes but never local or internal ones")
    func allowScheme() throws {
        #expect(try OpenPolicy.validateScheme("RTSP") == "rtsp")
        #expect(try OpenPolicy.validateScheme("sftp://") == "sftp")
        #expect(try OpenPolicy.validateScheme("smb:") == "smb")
        for bad in ["file", "FILE:", "av", "edl", "fd", "lavfi", "", "1x", "a b", "ht/tp"] {
            #expect(throws: CowatchError.self, "\(bad)") { try OpenPolicy.validateScheme(bad) }
        }
        let policy = OpenPolicy(allowedSchemes: ["https", "rtsp"])
        #expect(policy.allows("rtsp://cam/stream"))
        #expect(!policy.allows("http://plain/a.mkv"))
        // Even a policy built by hand with a local scheme never allows it.
        #expect(!OpenPolicy(allowedSchemes: ["file", "av"]).allows("file:///etc/passwd"))
        #expect(!OpenPolicy(allowedSchemes: ["file", "av"]).allows("av://lavfi:anullsrc"))
    }

    @Test("an allowed fallback is opened when the URL is not allowed")
    func fallback() {
        let decision = OpenPolicy(accept: .anyone).decide(
            activity("rtsp://cam/x", fallback: "https://media.example/x.mkv"), me: "bob", participants: Self.people)
        #expect(decision == .open("https://media.example/x.mkv"))
        let neither = OpenPolicy().decide(activity("rtsp://cam/x", fallback: "/local/x.mkv"), me: "bob", participants: Self.people)
        guard case .refuse(let error) = neither else {
            Issue.record("opened \(neither)")
            return
        }
        #expect(error.message.contains("rtsp"))
    }

    @Test("operators: only switches by the owner and operators are followed", arguments: [
        ("alice", true), ("olga", true), ("mo", false), ("ghost", false),
    ])
    func operators(opener: String, followed: Bool) {
        let policy = OpenPolicy(accept: .operators)
        let decision = policy.decide(activity("https://x/a.mkv", by: opener), me: "bob", participants: Self.people)
        if followed {
            #expect(decision == .open("https://x/a.mkv"))
        } else if case .refuse(let error) = decision {
            #expect(error.code == .openRefused)
            #expect(error.message.contains(opener) && error.message.contains("operator"))
        } else {
            Issue.record("\(opener)'s switch was followed: \(decision)")
        }
    }

    @Test("ask: every switch is offered, except our own")
    func ask() {
        let policy = OpenPolicy(accept: .ask)
        #expect(policy.decide(activity("https://x/a.mkv", by: "alice"), me: "bob", participants: Self.people) == .ask("https://x/a.mkv"))
        #expect(policy.decide(activity("https://x/a.mkv", by: "bob"), me: "bob", participants: Self.people) == .open("https://x/a.mkv"))
        // Our own switch to a scheme we do not allow is still refused.
        guard case .refuse = policy.decide(activity("rtsp://x/a", by: "bob"), me: "bob", participants: Self.people) else {
            Issue.record("opened our own rtsp switch")
            return
        }
    }
}

/// `--trust-host` and `--accept-open trusted` (the default): a member's switch opens at once only
/// to a trusted host; the owner's and operators' as before.
extension OpenPolicyTests {
    static func trusting(_ hosts: [String]) throws -> OpenPolicy {
        OpenPolicy(trustedHosts: try hosts.map { try TrustedHost(validating: $0) })
    }

    @Test("a trusted name covers itself and its subdomains, in any case, with a trailing dot; never look-alikes", arguments: [
        ("https://youtube.com/watch?v=1", true), ("https://www.youtube.com/watch?v=1", true),
        ("https://m.www.YouTube.COM/x", true), ("https://youtube.com./x", true), ("HTTPS://YOUTUBE.COM:443/x", true),
        ("https://youtube.com?x", true), ("https://youtube.com#x", true), ("http://127.0.0.1:8000/a.mkv", true),
        ("http://[::1]:8000/a.mkv", true), ("http://[::1]/a.mkv", true),
        ("https://youtube.com.evil.net/x", false), ("https://evilyoutube.com/x", false), ("https://youtube.co/x", false),
        ("https://youtube.com@evil.net/x", false), ("https://youtube.com:443@evil.net/", false),
        ("https://user@youtube.com/x", false), ("https://evil.net\\@youtube.com/x", false),
        ("https://evil.net%2fyoutube.com/x", false), ("https://youtube%2ecom/x", false), ("https://evil.net#@youtube.com", false),
        ("https://evil.net/youtube.com", false), ("https://evil.net?youtube.com", false), ("https://youtube.com:x@evil.net/", false),
        ("https://youtube.com:99999999/x", false), ("https://youtube.com../x", false), ("https://.youtube.com/x", false),
        ("https://yout\u{0443}be.com/x", false), ("https://www.youtube.\u{212A}om/x", false),
        ("http://127.1:8000/a.mkv", false), ("http://2130706433/a.mkv", false), ("http://0x7f000001/a.mkv", false),
        ("http://0177.0.0.1/a.mkv", false), ("http://127.0.0.10/a.mkv", false), ("http://10.127.0.0.1/a.mkv", false),
        ("http://[::2]/a.mkv", false), ("http://[::1%25eth0]/a.mkv", false), ("http://[::1/a.mkv", false),
        ("http:///a.mkv", false), ("/home/bob/a.mkv", false), ("youtube.com/x", false),
    ])
    func trustedHosts(url: String, trusted: Bool) throws {
        let policy = try Self.trusting(["youtube.com", "127.0.0.1", "[::1]"])
        #expect(policy.trusts(url) == trusted, "\(url)")
        let decision = policy.decide(activity(url, by: "mo"), me: "bob", participants: Self.people)
        if policy.allows(url) {
            #expect(decision == (trusted ? .open(url) : .ask(url)), "\(url): \(decision)")
        }
    }

    @Test("--trust-host values: names, addresses, case and trailing dots; anything else is refused", arguments: [
        ("youtube.com", "youtube.com"), ("YouTube.COM.", "youtube.com"), ("*.youtube.com", "youtube.com"),
        ("localhost", "localhost"), ("xn--bcher-kva.example", "xn--bcher-kva.example"), ("192.0.2.7", "192.0.2.7"),
        ("::1", "::1"), ("[2001:DB8::7]", "2001:db8::7"),
    ])
    func validHosts(text: String, host: String) throws {
        #expect(try TrustedHost(validating: text).host == host)
    }

    @Test("--trust-host refuses URLs, ports, paths, user names, escapes, odd addresses and control characters", arguments: [
        "", ".", "https://youtube.com", "youtube.com/watch", "youtube.com:443", "bob@youtube.com", "youtube%2ecom",
        "you tube.com", "youtube..com", "-", "a.-b", "b\u{00fc}cher.example", "\u{212A}.com", "youtube.com\n", "127.1",
        "0x7f000001", "2130706433", "0177.0.0.1", "256.1.1.1", "1.2.3.4.5", "::1%eth0", "[::1]:80", ":::1", "*",
        "*.", String(repeating: "a.", count: 130) + "com", String(repeating: "a", count: 64) + ".com", "\u{1b}[2J",
    ])
    func invalidHosts(text: String) {
        #expect(throws: CowatchError.self, "\(text)") { try TrustedHost(validating: text) }
        do {
            _ = try TrustedHost(validating: text)
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(!error.message.contains("\u{1b}") && !error.message.contains("\n"))
        }
    }

    @Test("trusted (the default): the owner's and operators' switches open anywhere, a member's only to a trusted host")
    func trustedDefault() throws {
        let policy = try Self.trusting(["media.example"])
        #expect(OpenPolicy().accept == .trusted && OpenPolicy().trustedHosts.isEmpty)
        let evil = "http://evil.net:8000/stream.m3u8"
        #expect(policy.decide(activity(evil, by: "alice"), me: "bob", participants: Self.people) == .open(evil))
        #expect(policy.decide(activity(evil, by: "olga"), me: "bob", participants: Self.people) == .open(evil))
        #expect(policy.decide(activity(evil, by: "mo"), me: "bob", participants: Self.people) == .ask(evil))
        #expect(policy.decide(activity(evil, by: "ghost"), me: "bob", participants: Self.people) == .ask(evil))
        #expect(policy.decide(activity(evil, by: nil), me: "bob", participants: Self.people) == .ask(evil))
        #expect(policy.decide(activity(evil, by: "bob"), me: "bob", participants: Self.people) == .open(evil))
        #expect(OpenPolicy().decide(activity(evil, by: "mo"), me: "bob", participants: Self.people) == .ask(evil))
        let good = "https://cdn.media.example/a.mkv"
        #expect(policy.decide(activity(good, by: "mo"), me: "bob", participants: Self.people) == .open(good))
        // The fallback the player would fall back to must be trusted too.
        #expect(policy.decide(activity(good, fallback: evil, by: "mo"), me: "bob", participants: Self.people) == .ask(good))
        #expect(policy.decide(activity(good, fallback: "/x.mkv", by: "mo"), me: "bob", participants: Self.people) == .open(good))
        #expect(policy.decide(activity("rtsp://x/a", fallback: good, by: "mo"), me: "bob", participants: Self.people) == .open(good))
        #expect(policy.decide(activity("rtsp://x/a", fallback: evil, by: "mo"), me: "bob", participants: Self.people) == .ask(evil))
        // A scheme not allowed is refused, trusted host or not.
        guard case .refuse = policy.decide(activity("rtsp://media.example/a", by: "mo"), me: "bob", participants: Self.people) else {
            Issue.record("opened rtsp")
            return
        }
    }

    @Test("the trust list does not change anyone, ask and operators")
    func otherSettings() throws {
        var policy = try Self.trusting(["media.example"])
        let good = "https://media.example/a.mkv"
        let evil = "https://evil.net/a.mkv"
        policy.accept = .anyone
        #expect(policy.decide(activity(evil, by: "mo"), me: "bob", participants: Self.people) == .open(evil))
        policy.accept = .ask
        #expect(policy.decide(activity(good, by: "mo"), me: "bob", participants: Self.people) == .ask(good))
        #expect(policy.decide(activity(good, by: "alice"), me: "bob", participants: Self.people) == .ask(good))
        policy.accept = .operators
        #expect(policy.decide(activity(good, by: "olga"), me: "bob", participants: Self.people) == .open(good))
        guard case .refuse = policy.decide(activity(good, by: "mo"), me: "bob", participants: Self.people) else {
            Issue.record("operators followed a member's switch to a trusted host")
            return
        }
    }
}
