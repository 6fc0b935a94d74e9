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
        let decision = OpenPolicy().decide(
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
