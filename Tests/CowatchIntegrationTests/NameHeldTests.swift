import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// Issue 22, item 1 with real processes: a name belongs to the token that last held it while the
/// room remembers it, so whoever comes while its person stepped out cannot be them.
@Suite("A name held while its person steps out", .serialized)
struct NameHeldTests {
    @Test("bob leaves; a raw client and another daemon as bob are refused name-taken; bob joins back, and his pause is his")
    func nameHeldAcrossLeave() throws {
        let viewers = try DaemonRoom(media: try TestMedia.audioVideo(), room: "held")
        defer { viewers.stop() }
        try viewers.add("alice")
        try viewers.add("bob")
        try viewers.waitForParticipants(2)
        try viewers.clients[0].request(.play)
        _ = try viewers.clients[1].waitForStatus(timeout: 10) { !$0.paused }

        let left = try runCowatch(["leave", "--socket", viewers.daemons[1].controlPath])
        #expect(left.status == 0, "\(left)")
        try viewers.waitJoined(0, participants: 1)

        // An outsider's raw hello as bob, over TLS like anyone's, without bob's token.
        let raw = try RawRoomClient(tlsPort: viewers.port)
        defer { raw.close() }
        raw.send(.rawHello(room: "held", name: "bob"))
        #expect(raw.read(type: "challenge") != nil)
        raw.send(.auth(.init()))
        let refusal = raw.read(type: "error")
        #expect(refusal?["code"]?.stringValue == "name-taken", "\(String(describing: refusal))")
        #expect(
            refusal?["message"]?.stringValue?.contains("belongs to someone who was in room held") == true,
            "\(String(describing: refusal))")

        // Another daemon named bob (its own state: no token of bob's) is refused too, and stays up.
        let impostor = try viewers.add("bob", waitJoined: false)
        let failed = viewers.failure(impostor, .join, timeout: 15)
        #expect(failed?.code == .nameTaken, "\(String(describing: failed))")
        #expect(viewers.daemons[impostor].process.isRunning)
        #expect(try viewers.clients[0].request(.getParticipants).arrayValue?.count == 1, "alice is still alone")

        // bob himself comes back as bob, with the token his daemon kept.
        let joined = try runCowatch(["join", "--socket", viewers.daemons[1].controlPath])
        #expect(joined.status == 0, "\(joined)")
        try viewers.waitJoined(1, participants: 2)
        try viewers.waitJoined(0, participants: 2)

        // What bob does is bob's, as alice sees it.
        let paused = try runCowatch(["pause", "--socket", viewers.daemons[1].controlPath])
        #expect(paused.status == 0, "\(paused)")
        let notices = try viewers.expectNotices("pause", actor: "bob", from: [0])
        #expect(notices.first?.fields["text"]?.stringValue?.hasPrefix("bob paused") == true, "\(notices)")
        _ = try viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
    }
}
