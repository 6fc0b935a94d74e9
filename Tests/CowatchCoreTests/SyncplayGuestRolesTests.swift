import Foundation
import Testing

@testable import CowatchCore

/// Issue 24: Cowatch's roles as Syncplay's controllers, and files a Syncplay client can read.
@Suite("Syncplay: roles as controllers for a guest, and its user list's files")
struct SyncplayGuestRolesTests {
    typealias T = SyncplayGuestTests

    static func controllerAuths(_ actions: [SyncplayGuest.Action]) -> [SyncplayControllerAuth] {
        T.sent(actions).flatMap { command -> [SyncplayControllerAuth] in
            guard case .set(let settings) = command else { return [] }
            return settings.compactMap { if case .controllerAuth(let auth) = $0 { auth } else { nil } }
        }
    }

    static func lists(_ actions: [SyncplayGuest.Action]) -> [[SyncplayListedUser]] {
        T.sent(actions).compactMap { if case .list(let users?) = $0 { users } else { nil } }
    }

    static func chat(_ actions: [SyncplayGuest.Action]) -> String {
        T.sent(actions).compactMap { if case .chat(let line) = $0 { line.message } else { nil } }.joined(separator: " ")
    }

    /// A guest welcomed into a managed room (alice its owner), greeted, its forced state echoed.
    static func managed() -> SyncplayGuest {
        var guest = SyncplayGuest(configuration: .init())
        _ = guest.connected(now: 0)
        _ = guest.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 1)
        _ = guest.roomConnected(now: 1)
        _ = guest.fromRoom(.challenge(.init(nonce: "00", access: .open)), now: 1)
        _ = guest.fromRoom(.welcome(.init(
            name: "carol", room: "movies", timeline: T.playing,
            participants: [ParticipantInfo(name: "alice", state: "joined", role: .owner), ParticipantInfo(name: "carol", state: "joined")],
            activity: Activity(url: "film.mkv"), policy: RoomPolicy(managed: true))), now: 10)
        _ = guest.fromRoom(.playlist(PlaylistState(), change: nil, requestID: nil), now: 10)
        _ = guest.received([.state(SyncplayState(playstate: .init(position: 100, paused: false), ignoring: .init(server: 1)))], now: 10.1)
        return guest
    }

    @Test("the client's claim of control is refused alike whatever its password, saying how control is given here; nothing reaches the room")
    func claimRefused() {
        var guest = Self.managed()
        let first = guest.received([.set([.controllerAuth(SyncplayControllerAuth(room: "movies", password: "AB-123-456"))])], now: 11)
        let second = guest.received([.set([.controllerAuth(SyncplayControllerAuth(room: "movies", password: "ZZ-999-999"))])], now: 11)
        #expect(Self.controllerAuths(first) == [SyncplayControllerAuth(room: "movies", user: "carol", success: false)])
        #expect(first == second, "the answer does not depend on the password")
        #expect(Self.chat(first).contains("owner") && Self.chat(first).contains("cowatch op carol"), "\(Self.chat(first))")
        #expect(T.toRoom(first).isEmpty && T.closes(first) == nil)
        var open = T.welcomed()
        let answer = open.received([.set([.controllerAuth(SyncplayControllerAuth(room: "movies", password: "AB-123-456"))])], now: 11)
        #expect(Self.controllerAuths(answer).first?.success == false && Self.chat(answer).contains("Everyone"), "\(Self.chat(answer))")
    }

    @Test("made an operator by the owner: told with controllerAuth's success and who did it, and its pause then counts; made a member again: the list again")
    func opAndDeop() throws {
        var guest = Self.managed()
        let op = guest.fromRoom(.notice(Notice(actor: "alice", action: .op, others: ["carol"])), now: 11)
        #expect(Self.controllerAuths(op) == [SyncplayControllerAuth(room: "movies", user: "carol", success: true)])
        #expect(Self.chat(op).contains("alice made carol an operator"))
        #expect(Self.lists(guest.received([.list(nil)], now: 11)).first?.first { $0.username == "carol" }?.controller == true)
        // The room's next participants list says the same: nothing more is said.
        let same = guest.fromRoom(.participants([
            ParticipantInfo(name: "alice", state: "joined", role: .owner), ParticipantInfo(name: "carol", state: "joined", role: .operator),
        ]), now: 11.5)
        #expect(T.sent(same).isEmpty, "\(same)")
        // Its pause is the room's action; the room applies it (an operator's): echoed, not put back.
        let asked = T.toRoom(guest.received([.state(SyncplayState(playstate: .init(position: 102, paused: true), ignoring: .init(client: 1)))], now: 12))
        guard case .action(let request)? = asked.first else {
            Issue.record("no action: \(asked)")
            return
        }
        let applied = guest.fromRoom(.applied(
            timeline: GroupTimeline(seq: 4, position: 102, reference: 12.05, rate: 1, playing: false),
            notice: Notice(actor: "carol", action: .pause, position: 102), actionID: request.id), now: 12.01)
        #expect(T.states(applied).first?.ignoring?.server == nil && T.states(applied).first?.playstate?.paused == true, "not put back")
        let deop = guest.fromRoom(.notice(Notice(actor: "alice", action: .deop, others: ["carol"])), now: 13)
        let list = try #require(Self.lists(deop).first, "Syncplay has no word for losing control: the list again")
        #expect(list.first { $0.username == "carol" }?.controller == false && list.first { $0.username == "alice" }?.controller == true)
        #expect(Self.chat(deop).contains("alice made carol a member") && Self.controllerAuths(deop).isEmpty)
    }

    @Test("someone else becomes a controller (an op, or an operator joining): the room hears controllerAuth's success once; losing it sends the list")
    func othersRoles() {
        var guest = T.welcomed()
        let joined = guest.fromRoom(.notice(Notice(actor: "bob", action: .join)), now: 11)
        #expect(Self.controllerAuths(joined).isEmpty, "not known as an operator yet")
        let listed: [ParticipantInfo] = [
            ParticipantInfo(name: "alice", state: "joined", role: .owner), ParticipantInfo(name: "carol", state: "joined"),
            ParticipantInfo(name: "bob", state: "joined", role: .operator),
        ]
        #expect(Self.controllerAuths(guest.fromRoom(.participants(listed), now: 11.5)) == [SyncplayControllerAuth(room: "movies", user: "bob", success: true)])
        #expect(T.sent(guest.fromRoom(.participants(listed), now: 12.5)).isEmpty, "said once")
        // bob leaves and comes back: Syncplay's client adds a joiner as no controller, so it is said again.
        _ = guest.fromRoom(.notice(Notice(actor: "bob", action: .leave)), now: 13)
        let back = guest.fromRoom(.notice(Notice(actor: "bob", action: .join)), now: 14)
        #expect(Self.controllerAuths(back) == [SyncplayControllerAuth(room: "movies", user: "bob", success: true)], "\(back)")
        var demoted = listed
        demoted[2].role = .member
        let lost = guest.fromRoom(.participants(demoted), now: 15)
        #expect(Self.lists(lost).first?.first { $0.username == "bob" }?.controller == false)
    }

    @Test("every listed file has a numeric size and duration (0 when unknown), which Syncplay's client compares with its own")
    func listedFilesHaveSize() throws {
        var guest = T.welcomed()
        _ = guest.received([.set([.file(SyncplayFile(name: "other.mkv", duration: 75, size: 1000))])], now: 11)
        let users = try #require(Self.lists(guest.received([.list(nil)], now: 11)).first)
        let alice = try #require(users.first { $0.username == "alice" }?.file)
        #expect(alice.name == "film.mkv" && alice.size == 0 && alice.duration == 0, "\(alice)")
        #expect(users.first { $0.username == "carol" }?.file == SyncplayFile(name: "other.mkv", duration: 75, size: 1000))
        // On the wire: Syncplay reads file["size"] and file["duration"] of everyone listed.
        let line = String(decoding: SyncplayCodec.encode(.list(users)), as: UTF8.self)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let rooms = try #require(json["List"] as? [String: [String: [String: Any]]])
        for (_, user) in rooms["movies"] ?? [:] {
            let file = try #require(user["file"] as? [String: Any])
            #expect(file["size"] is NSNumber && file["duration"] is NSNumber, "\(file)")
        }
        // A client that sent a file without a size hears it back with one.
        var bare = T.welcomed()
        let echo = bare.received([.set([.file(SyncplayFile(name: "film.mkv", duration: 75))])], now: 11)
        #expect(T.sent(echo) == [.set([.user(SyncplayUserUpdate(username: "carol", room: "movies", file: SyncplayFile(name: "film.mkv", duration: 75, size: 0)))])])
    }
}
