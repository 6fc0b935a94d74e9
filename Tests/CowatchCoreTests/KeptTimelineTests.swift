@testable import CowatchCore
import Testing

/// Issue 21 item 5: a room's place is kept with its record, and a restarted room resumes from it
/// or from someone who may control playback, never from a stranger or a member of a managed room.
@Suite("The room's place, kept with its record")
struct KeptTimelineTests: SequencerTesting {
    let film = Activity(url: "/films/night.mkv")
    /// One token key across the restart, as a server's state directory keeps it.
    static let key = [UInt8](repeating: 7, count: 32)
    let tokens = SessionTokens(key: Self.key)
    /// The owner's token from before the restart.
    static let aliceToken = SessionTokens(key: key).issue(room: "r", name: "alice")

    /// A server that restarted at 100 s, with room "r" kept playing at 40 s at 100 s (rate 1).
    func restarted(managed: Bool = false, kept: RoomSequencer.KeptTimeline? = nil) -> RoomSequencer {
        var configuration = RoomSequencer.Configuration()
        configuration.managed = managed
        configuration.admission.idleTimeout = 1e9
        configuration.tokenKey = Self.key
        let record = RoomSequencer.RoomRecord(
            owner: "alice", ownerToken: SessionTokens.id(of: Self.aliceToken),
            timeline: kept ?? .init(url: film.url, title: nil, position: 40, playing: true, rate: 1, at: 100))
        return RoomSequencer(configuration: configuration, records: ["r": record], now: 100)
    }

    func welcome(_ sequencer: inout RoomSequencer, _ hello: ClientMessage.Hello, from id: Int, now: Double) -> ServerMessage.Welcome? {
        sequencer.connected(id, now: now)
        for message in messages(sequencer.enter(.hello(hello), from: id, now: now), to: id) {
            if case .welcome(let welcome) = message { return welcome }
        }
        return nil
    }

    @Test("a stranger who comes back first gets the kept place, advanced while it played; his own word is ignored")
    func strangerFirst() throws {
        var sequencer = restarted()
        let resume = ClientMessage.Hello.Resume(position: 0, playing: false, rate: 0.5)
        let got = try #require(welcome(&sequencer, .init(room: "r", name: "x", activity: film, resume: resume), from: 1, now: 110))
        #expect(got.timeline == GroupTimeline(seq: 0, position: 50, reference: 110, rate: 1, playing: true))
    }

    @Test("a member with its token resumes the room in an unmanaged room; in a managed one only the owner does")
    func whoMayResume() throws {
        let bob = tokens.issue(room: "r", name: "bob")
        let resume = ClientMessage.Hello.Resume(position: 5, playing: false, rate: 0.5)
        var open = restarted()
        let fromBob = try #require(welcome(&open, .init(room: "r", name: "bob", token: bob, activity: film, resume: resume), from: 1, now: 110))
        #expect(fromBob.timeline == GroupTimeline(seq: 0, position: 5, reference: 110, rate: 0.5, playing: false))

        var managed = restarted(managed: true)
        let member = try #require(welcome(&managed, .init(room: "r", name: "bob", token: bob, activity: film, resume: resume), from: 1, now: 110))
        #expect(member.timeline.position == 50 && member.timeline.playing)

        var owned = restarted(managed: true)
        let owner = try #require(welcome(&owned, .init(room: "r", name: "alice", token: Self.aliceToken, activity: film, resume: resume), from: 1, now: 110))
        #expect(owner.timeline.position == 5 && !owner.timeline.playing)
    }

    @Test("another film does not take the kept place: it starts from the beginning")
    func otherActivity() throws {
        var sequencer = restarted()
        let got = try #require(welcome(&sequencer, .init(room: "r", name: "x", activity: Activity(url: "/films/other.mkv")), from: 1, now: 110))
        #expect(got.timeline == .initial(at: 110))
    }

    @Test("a room everyone left keeps its place, paused; records to save carry a live room's place")
    func leftAndSaved() throws {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 1)
        let saved = sequencer.recordsForSaving(now: 11)["r"]?.timeline
        #expect(saved?.playing == true && saved.map { abs($0.position - 10) < 0.5 } == true, "\(String(describing: saved))")
        #expect(sequencer.timelinesChanged)
        sequencer.markTimelinesSaved()
        #expect(!sequencer.timelinesChanged)
        _ = sequencer.disconnected(1, now: 20)
        _ = sequencer.disconnected(2, now: 20)
        let kept = try #require(sequencer.records["r"]?.timeline)
        #expect(!kept.playing && abs(kept.position - 19) < 0.5, "\(kept)")
        let back = try #require(welcome(&sequencer, .init(room: "r", name: "x", activity: film), from: 3, now: 30))
        #expect(!back.timeline.playing && abs(back.timeline.position - 19) < 0.5)
    }
}

@Suite("A member whose link is dark")
struct SilentMemberTests: SequencerTesting {
    @Test("a member not heard from for 5 s reads silent in the list everyone gets; a report makes it joined again")
    func silent() {
        var sequencer = room(["alice", "bob"])
        var told = false
        for t in stride(from: 1.0, through: 8, by: 1) {
            _ = sequencer.received(.report(drift: 0.001, rtt: 0.002), from: 1, now: t)
            for output in sequencer.tick(now: t + 0.5) {
                if case .send(1, .participants(let list)) = output, list.contains(where: { $0.name == "bob" && $0.state == "silent" }) {
                    told = true
                }
            }
        }
        #expect(told, "alice was never told that bob's link is silent")
        _ = sequencer.received(.report(drift: 0.001, rtt: 0.002), from: 2, now: 9.2)
        let back = sequencer.tick(now: 9.6).contains { output in
            if case .send(1, .participants(let list)) = output { return list.contains { $0.name == "bob" && $0.state == "joined" } }
            return false
        }
        #expect(back, "bob's report did not make him joined again in the list")
    }
}
