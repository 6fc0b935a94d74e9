import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// Issue 22, item 1 with real processes: a name belongs to the token that last held it while the
/// room remembers it, so whoever comes while its person stepped out cannot be them.
@Suite("A name held while its person steps out", .serialized, .realProcesses)
struct NameHeldTests {
    @Test("bob leaves; a raw client and another daemon as bob are refused name-taken; bob joins back, and his pause is his")
    func nameHeldAcrossLeave() async throws {
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "held")
        defer { viewers.stopInBackground() }
        try await viewers.add("alice")
        try await viewers.add("bob")
        try await viewers.waitForParticipants(2)
        try await viewers.clients[0].request(.play)
        _ = try await viewers.clients[1].waitForStatus(timeout: 10) { !$0.paused }

        let left = try await runCowatch(["leave", "--socket", viewers.daemons[1].controlPath])
        #expect(left.status == 0, "\(left)")
        try await viewers.waitJoined(0, participants: 1)

        // An outsider's raw hello as bob, over TLS like anyone's, without bob's token.
        let raw = try RawRoomClient(tlsPort: viewers.port)
        defer { raw.close() }
        await raw.send(.rawHello(room: "held", name: "bob"))
        #expect(await raw.read(type: "challenge") != nil)
        await raw.send(.auth(.init()))
        let refusal = await raw.read(type: "error")
        #expect(refusal?["code"]?.stringValue == "name-taken", "\(String(describing: refusal))")
        #expect(
            refusal?["message"]?.stringValue?.contains("belongs to someone who was in room held") == true,
            "\(String(describing: refusal))")

        // Another daemon named bob (its own state: no token of bob's) is refused too, and stays up.
        let impostor = try await viewers.add("bob", waitJoined: false)
        let failed = await viewers.failure(impostor, .join, timeout: 15)
        #expect(failed?.code == .nameTaken, "\(String(describing: failed))")
        #expect(viewers.daemons[impostor].process.isRunning)
        #expect(try await viewers.clients[0].request(.getParticipants).arrayValue?.count == 1, "alice is still alone")

        // bob himself comes back as bob, with the token his daemon kept.
        let joined = try await runCowatch(["join", "--socket", viewers.daemons[1].controlPath])
        #expect(joined.status == 0, "\(joined)")
        try await viewers.waitJoined(1, participants: 2)
        try await viewers.waitJoined(0, participants: 2)

        // What bob does is bob's, as alice sees it.
        let paused = try await runCowatch(["pause", "--socket", viewers.daemons[1].controlPath])
        #expect(paused.status == 0, "\(paused)")
        let notices = try await viewers.expectNotices("pause", actor: "bob", from: [0])
        #expect(notices.first?.fields["text"]?.stringValue?.hasPrefix("bob paused") == true, "\(notices)")
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
    }
}
