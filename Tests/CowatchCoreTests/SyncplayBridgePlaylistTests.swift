import Testing

@testable import CowatchCore

/// Issue 24, part 1: a Syncplay room's shared playlist as the daemon's room playlist.
@Suite("Syncplay: a Syncplay room's shared playlist as the daemon's playlist")
struct SyncplayBridgePlaylistTests {
    typealias B = SyncplayBridgeTests

    static let ep1 = MediaIdentity(size: 1000, fingerprint: String(repeating: "a", count: 64), duration: 60, name: "ep1.mkv")
    static let ep3 = MediaIdentity(size: 3000, fingerprint: String(repeating: "c", count: 64), duration: 60, name: "ep3.mkv")

    static func identify(_ actions: [SyncplayBridge.Action]) -> [String] {
        actions.flatMap { action -> [String] in
            if case .identify(let names) = action { return names }
            return []
        }
    }

    static func playlists(_ actions: [SyncplayBridge.Action]) -> [(PlaylistState, PlaylistChange?, Int?)] {
        B.delivered(actions).compactMap { if case .playlist(let state, let change, let id) = $0 { (state, change, id) } else { nil } }
    }

    static func switches(_ actions: [SyncplayBridge.Action]) -> [(GroupTimeline, Notice?, Activity)] {
        B.delivered(actions).compactMap {
            if case .applied(let timeline, let notice, _, let activity?) = $0 { (timeline, notice, activity) } else { nil }
        }
    }

    /// A daemon ("alice", playing its own film.mkv) joining a Syncplay room whose list is
    /// ep1.mkv, ep2.mkv with ep1 current (said before the server's Hello, as Syncplay's server
    /// does); this machine has ep1 only. Returns the bridge, welcomed, and what the welcome said.
    static func joined() -> (SyncplayBridge, [SyncplayBridge.Action]) {
        var bridge = SyncplayBridge(configuration: .init(username: "alice", room: "movies", askTLS: false))
        _ = bridge.connected(now: 0)
        _ = bridge.fromDaemon(.hello(ClientMessage.Hello(room: "movies", name: "alice", activity: Activity(url: "/films/film.mkv"))), now: 0)
        _ = bridge.fromDaemon(.auth(.init()), now: 0)
        let listed = bridge.received([.set([.playlistChange(files: ["ep1.mkv", "ep2.mkv"], user: nil)])], now: 0.1)
        #expect(identify(listed) == ["ep1.mkv", "ep2.mkv"], "\(listed)")
        _ = bridge.identified(["ep1.mkv": ep1], now: 0.1)
        _ = bridge.received([.set([.playlistIndex(index: 0, user: nil)])], now: 0.1)
        _ = bridge.received([.hello(SyncplayHello(username: "alice", room: "movies", realVersion: "1.6.9"))], now: 0.1)
        let welcome = bridge.received(SyncplayClientTests.serverState(position: 10, paused: true, stamp: 5000), now: 1)
        return (bridge, welcome)
    }

    @Test("joining: the welcome, then the list (this machine's file by identity, a missing one by name only) with its current entry as the daemon's media")
    func joining() throws {
        let (_, welcome) = Self.joined()
        let delivered = B.delivered(welcome)
        guard case .welcome(let said)? = delivered.first else {
            Issue.record("no welcome first: \(delivered)")
            return
        }
        let (state, _, _) = try #require(Self.playlists(welcome).first)
        #expect(state.entries.map(\.displayTitle) == ["ep1.mkv", "ep2.mkv"])
        #expect(state.entries[0].media == .file(Self.ep1))
        guard case .file(let missing) = state.entries[1].media else { throw TestFailure("ep2 is not a file entry") }
        #expect(missing.name == "ep2.mkv" && missing.fingerprint == SyncplayBridge.unknownFingerprint)
        #expect(state.current == state.entries[0].id && state.activity == said.activity.id, "the current entry is what the daemon plays")
    }

    @Test("someone's new index switches the daemon's media, with who chose it; an index on the file it plays reloads nothing")
    func roomSwitches() throws {
        var (bridge, _) = Self.joined()
        let chosen = bridge.received([.set([.playlistIndex(index: 1, user: "bob")])], now: 5)
        let (state, change, _) = try #require(Self.playlists(chosen).first)
        let (timeline, notice, activity) = try #require(Self.switches(chosen).first)
        #expect(state.current == state.entries[1].id && state.activity == activity.id)
        #expect(change?.actor == "bob" && change?.text.contains("#2") == true)
        #expect(activity.url == "ep2.mkv" && activity.openedBy == "bob" && notice?.action == .open && notice?.actor == "bob")
        #expect(timeline.position == 0 && !timeline.playing)

        // A client that listed its own film (the one the daemon plays) and chose it: no reload.
        var (other, _) = Self.joined()
        _ = other.received([.set([.playlistChange(files: ["ep1.mkv", "ep2.mkv", "film.mkv"], user: "carol")])], now: 5)
        let same = other.received([.set([.playlistIndex(index: 2, user: "carol")])], now: 5)
        #expect(Self.switches(same).isEmpty, "\(same)")
        #expect(Self.playlists(same).first?.0.current != nil)
    }

    @Test("the daemon's edits become Syncplay's: the list replaced whole, a choice with a rewind, the next entry at the end of its file")
    func daemonEdits() throws {
        var (bridge, _) = Self.joined()
        let state = try #require(Self.playlists(Self.joined().1).first?.0)
        let added = bridge.fromDaemon(.playlistEdit(PlaylistEditRequest(id: 7, version: state.version, current: state.current, edit: .add([PlaylistItem(file: Self.ep3)], next: false))), now: 5)
        #expect(B.sent(added) == [.set([.playlistChange(files: ["ep1.mkv", "ep2.mkv", "ep3.mkv"], user: nil)])])
        let (after, change, requestID) = try #require(Self.playlists(added).last)
        #expect(requestID == 7 && change?.actor == "alice" && after.entries.last?.media == .file(Self.ep3))

        let twice = bridge.fromDaemon(.playlistEdit(PlaylistEditRequest(id: 8, version: after.version, current: after.current, edit: .add([PlaylistItem(file: Self.ep3)], next: false))), now: 5)
        #expect(B.sent(twice).isEmpty)
        #expect(B.delivered(twice).contains { if case .refused(8, "invalid-argument", _) = $0 { true } else { false } }, "a name listed twice: \(twice)")

        let jumped = bridge.fromDaemon(.playlistEdit(PlaylistEditRequest(id: 9, version: after.version, current: after.current, edit: .jump(after.entries[2].id))), now: 6)
        let sent = B.sent(jumped)
        #expect(sent.contains(.set([.playlistIndex(index: 2, user: nil)])), "\(sent)")
        #expect(sent.contains { if case .state(let state) = $0 { state.playstate?.position == 0 && state.playstate?.doSeek == true } else { false } },
            "a rewind, as Syncplay's client says one: \(sent)")
        let (_, _, activity) = try #require(Self.switches(jumped).first)
        #expect(activity.url == "ep3.mkv" && Self.playlists(jumped).first?.2 == 9)

        let past = bridge.fromDaemon(.playlistEdit(PlaylistEditRequest(id: 10, version: after.version, current: after.current, edit: .next)), now: 7)
        #expect(B.delivered(past).contains { if case .refused(10, _, _) = $0 { true } else { false } }, "no entry after the last")
        let shuffle = bridge.fromDaemon(.playlistEdit(PlaylistEditRequest(id: 11, version: after.version, current: after.current, edit: .setShuffle(true))), now: 7)
        #expect(B.delivered(shuffle).contains { if case .refused(11, "unsupported", _) = $0 { true } else { false } })

        // The end of the current entry's file moves the room on, as Syncplay's client does.
        var (ending, _) = Self.joined()
        let onTwo = Self.switches(ending.received([.set([.playlistIndex(index: 0, user: "bob")])], now: 5))
        #expect(onTwo.isEmpty, "index 0 is current already")
        let welcomeActivity = try #require(Self.playlists(Self.joined().1).first?.0.activity)
        let ended = ending.fromDaemon(.playlistEnded(activity: welcomeActivity, position: 60), now: 70)
        #expect(B.sent(ended).contains(.set([.playlistIndex(index: 1, user: nil)])), "\(ended)")
        #expect(Self.switches(ended).first?.2.url == "ep2.mkv")
    }
}

private struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
