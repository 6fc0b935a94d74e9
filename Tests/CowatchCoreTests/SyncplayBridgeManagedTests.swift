import Testing

@testable import CowatchCore

/// `cowatch manage` in a Syncplay room: the bridge makes it managed as Syncplay's "Create managed
/// room" does, and answers once the server says we control the new room.
@Suite("Syncplay: making a managed room from Cowatch")
struct SyncplayBridgeManagedTests {
    typealias Bridge = SyncplayBridgeTests
    typealias Server = SyncplayClientTests

    static let made = "+movies:ABCDEF123456"

    static func answers(_ actions: [SyncplayBridge.Action]) -> [SyncplayBridge.Action] {
        actions.filter {
            switch $0 {
            case .managed, .manageRefused, .managedRoomCreated: true
            default: false
            }
        }
    }

    /// A welcomed bridge that asked to manage its room "movies" and heard the new room's name.
    static func moved() throws -> (SyncplayBridge, [SyncplayBridge.Action]) {
        var (bridge, _) = Bridge.welcomed()
        let ask = try bridge.manage(password: "AB-123-456", now: 2)
        #expect(Bridge.sent(ask) == [.set([.controllerAuth(SyncplayControllerAuth(room: "movies", password: "AB-123-456"))])])
        let moved = bridge.received([.set([.newControlledRoom(roomName: made, password: "AB-123-456")])], now: 2.1)
        return (bridge, moved)
    }

    @Test("manage: the base name claimed; the new room joined with our timeline and claimed; answered once the server says we control it")
    func madeAndClaimed() throws {
        var (bridge, moved) = try Self.moved()
        let sent = Bridge.sent(moved)
        #expect(sent.first == .set([.room(name: Self.made, password: nil)]))
        #expect(sent.contains(.set([.controllerAuth(SyncplayControllerAuth(room: Self.made, password: "AB-123-456"))])))
        // Syncplay forces the new room's state on whoever enters; the answer is our timeline.
        let entered = bridge.received(Server.serverState(position: 0, paused: true, stamp: 5002, doSeek: true, ignoring: .init(server: 2)), now: 2.15)
        #expect(Bridge.sent(entered).contains { if case .state(let state) = $0 { state.playstate?.doSeek == true && state.playstate?.paused == false } else { false } },
            "the room takes our timeline: \(entered)")
        #expect(!Bridge.delivered(entered).contains { if case .applied = $0 { true } else { false } }, "not the new room's paused 0")
        #expect(Self.answers(moved) == [.managedRoomCreated(room: Self.made, password: "AB-123-456")], "kept for reconnects; not yet answered")
        #expect(bridge.client.room == Self.made)
        // Until the server says we control it, our pause would be undone: refused.
        let early = Bridge.delivered(bridge.fromDaemon(.action(.init(id: 4, kind: .pause, position: 101)), now: 2.2))
        #expect(early.first.map { if case .refused(4, "not-permitted", _) = $0 { true } else { false } } == true, "\(early)")
        // Someone else's verdict is not ours.
        #expect(Self.answers(bridge.received([.set([.controllerAuth(.init(room: Self.made, user: "bob", success: true))])], now: 2.25)).isEmpty)
        let claimed = bridge.received([.set([.controllerAuth(.init(room: Self.made, user: "alice_", success: true))])], now: 2.3)
        #expect(Self.answers(claimed) == [.managed(SyncplayControlledRoom(room: Self.made, password: "AB-123-456", created: true))])
        let pause = Bridge.delivered(bridge.fromDaemon(.action(.init(id: 5, kind: .pause, position: 101)), now: 2.4))
        #expect(pause.last.map { if case .applied(_, _, 5, nil) = $0 { true } else { false } } == true, "\(pause)")
        // Asked again: the room we control, at once, nothing sent.
        let again = try bridge.manage(password: "ZZ-999-999", now: 3)
        #expect(again == [.managed(SyncplayControlledRoom(room: Self.made, password: "AB-123-456", created: false))])
    }

    @Test("a refused claim answers manage-refused (not-permitted)")
    func refused() throws {
        var (bridge, _) = Bridge.welcomed()
        _ = try bridge.manage(password: "AB-123-456", now: 2)
        let no = bridge.received([.set([.controllerAuth(.init(room: "movies", user: "alice_", success: false))])], now: 2.1)
        guard case .manageRefused(let error)? = Self.answers(no).first else {
            Issue.record("not refused: \(no)")
            return
        }
        #expect(error.code == .notPermitted)
        var (moving, _) = try Self.moved()
        let lost = moving.received([.set([.controllerAuth(.init(room: Self.made, user: "alice_", success: false))])], now: 2.3)
        #expect(Self.answers(lost).contains { if case .manageRefused = $0 { true } else { false } }, "\(lost)")
    }

    @Test("before the welcome: not-in-room; a second manage on its way sends nothing more")
    func earlyAndRepeated() throws {
        var early = SyncplayBridge(configuration: .init(username: "alice", room: "movies", askTLS: false))
        #expect(throws: CowatchError(.notInRoom, "")) { try early.manage(password: "AB-123-456", now: 0) }
        var (bridge, _) = Bridge.welcomed()
        _ = try bridge.manage(password: "AB-123-456", now: 2)
        #expect(try bridge.manage(password: "CD-123-456", now: 2.01).isEmpty)
    }

    @Test("the shared list goes along into the new room; the new room's empty list, said before ours reached it, clears nothing")
    func listCarried() throws {
        var (bridge, _) = Bridge.welcomed()
        _ = bridge.received([.set([.playlistChange(files: ["a.mkv", "b.mkv"], user: "bob")])], now: 1.5)
        _ = bridge.identified([:], now: 1.5)
        _ = bridge.received([.set([.playlistIndex(index: 1, user: "bob")])], now: 1.6)
        _ = try bridge.manage(password: "AB-123-456", now: 2)
        let moved = bridge.received([.set([.newControlledRoom(roomName: Self.made, password: "AB-123-456")])], now: 2.1)
        let sent = Bridge.sent(moved)
        let claim = try #require(sent.firstIndex(of: .set([.controllerAuth(SyncplayControllerAuth(room: Self.made, password: "AB-123-456"))])))
        let list = try #require(sent.firstIndex(of: .set([.playlistChange(files: ["a.mkv", "b.mkv"], user: nil)])))
        #expect(claim < list, "the list goes after the claim: only controllers change a managed room's list")
        #expect(sent.contains(.set([.playlistIndex(index: 1, user: nil)])))
        let empty = Bridge.delivered(bridge.received([.set([.playlistChange(files: [], user: nil)])], now: 2.15))
        #expect(empty.isEmpty, "\(empty)")
        #expect(bridge.sharedNames == ["a.mkv", "b.mkv"])
        _ = bridge.received([.set([.playlistChange(files: ["a.mkv", "b.mkv"], user: "alice_")])], now: 2.2)
        // Our list echoed: from here on the room's word counts again.
        let cleared = Bridge.delivered(bridge.received([.set([.playlistChange(files: [], user: nil)])], now: 3))
        #expect(!cleared.isEmpty && bridge.sharedNames.isEmpty)
    }
}

@Suite("Syncplay: room links written back")
struct SyncplayAddressLinkTests {
    @Test("link is what init(parsing:) reads back: the default port left out, odd characters %-encoded, a managed room's + and : kept",
        arguments: [
            SyncplayAddress(host: "syncplay.pl", room: "+movies:ABCDEF123456"), SyncplayAddress(host: "127.0.0.1", port: 8995, room: "movie night"),
            SyncplayAddress(host: "::1", port: 9000, room: "+a/b?c#d%e:0123456789AB"), SyncplayAddress(host: "h", room: "café"),
        ])
    func roundTrip(address: SyncplayAddress) throws {
        #expect(try SyncplayAddress(parsing: address.link) == address, "\(address.link)")
        #expect(!address.link.contains(" "))
    }

    @Test("the managed room's link as others join it")
    func managedLink() {
        #expect(SyncplayAddress(host: "syncplay.pl", room: "+movies:ABCDEF123456").link == "syncplay://syncplay.pl/+movies:ABCDEF123456")
        #expect(SyncplayAddress(host: "10.0.0.2", port: 8995, room: "+movie night:ABCDEF123456").link == "syncplay://10.0.0.2:8995/+movie%20night:ABCDEF123456")
    }
}
