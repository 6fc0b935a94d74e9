import Testing

@testable import CowatchCore

/// Issue 24, part 2: the room's playlist as a Syncplay client's shared playlist, both ways.
@Suite("Syncplay: the room's playlist as a Syncplay client's shared playlist")
struct SyncplayGuestPlaylistTests {
    typealias T = SyncplayGuestTests

    static func file(_ name: String, _ fill: Character) -> PlaylistEntry.Media {
        .file(MediaIdentity(size: 1000, fingerprint: String(repeating: fill, count: 64), duration: 60, name: name))
    }

    /// ep1.mkv (1), ep2.mkv (2), a URL (3), ep1.mkv again (4): ep2 plays, at version 7.
    static let list = PlaylistState(
        version: 7,
        entries: [
            PlaylistEntry(id: 1, media: file("ep1.mkv", "a"), addedBy: "alice"),
            PlaylistEntry(id: 2, media: file("ep2.mkv", "b"), addedBy: "alice"),
            PlaylistEntry(id: 3, media: .url("https://example.org/talk.mp4"), addedBy: "bob"),
            PlaylistEntry(id: 4, media: file("ep1.mkv", "a"), addedBy: "bob"),
        ],
        current: 2, activity: 5)
    static let names = ["ep1.mkv", "ep2.mkv", "https://example.org/talk.mp4"]

    /// A guest welcomed into a room that speaks `playlist`, greeted with `list`.
    static func greeted(_ list: PlaylistState = Self.list) -> (SyncplayGuest, [SyncplayGuest.Action]) {
        var guest = SyncplayGuest(configuration: .init())
        _ = guest.connected(now: 0)
        _ = guest.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 1)
        _ = guest.roomConnected(now: 1)
        _ = guest.fromRoom(.challenge(.init(nonce: "00", access: .open)), now: 1)
        let welcome = guest.fromRoom(.welcome(.init(
            name: "carol", room: "movies", timeline: T.playing, participants: [ParticipantInfo(name: "alice", state: "joined")],
            activity: Activity(url: "ep2.mkv"))), now: 10)
        #expect(T.sent(welcome).isEmpty, "nothing before the room's list: \(welcome)")
        let greeting = guest.fromRoom(.playlist(list, change: nil, requestID: nil), now: 10)
        return (guest, greeting)
    }

    static func edits(_ actions: [SyncplayGuest.Action]) -> [PlaylistEditRequest] {
        T.toRoom(actions).compactMap { if case .playlistEdit(let request) = $0 { request } else { nil } }
    }

    static func chat(_ actions: [SyncplayGuest.Action]) -> String {
        T.sent(actions).compactMap { if case .chat(let line) = $0 { line.message } else { nil } }.joined(separator: " ")
    }

    @Test("the greeting carries the room's list (each name once, URLs as they are) and its current entry, said by someone, before Hello")
    func greeting() {
        let (_, greeting) = Self.greeted()
        let commands = T.sent(greeting)
        let hello = commands.firstIndex { if case .hello = $0 { true } else { false } }
        let change = commands.firstIndex(of: .set([.playlistChange(files: Self.names, user: "movies")]))
        let index = commands.firstIndex(of: .set([.playlistIndex(index: 1, user: "movies")]))
        #expect(hello != nil && change != nil && index != nil, "\(commands)")
        #expect(change! < index! && index! < hello!, "list, index, then Hello: \(commands)")
    }

    @Test("names Syncplay could not take are left out of its view; the view keeps which entry each name stands for")
    func view() {
        var state = Self.list
        state.entries.append(PlaylistEntry(id: 9, media: Self.file(String(repeating: "x", count: 251) + ".mkv", "c"), addedBy: "eve"))
        state.entries.append(PlaylistEntry(id: 10, media: Self.file("bad\u{202E}name.mkv", "d"), addedBy: "eve"))
        let view = SyncplayPlaylistView(state)
        #expect(view.names == Self.names)
        #expect(view.ids == [1, 2, 3])
        #expect(view.index(of: 2) == 1 && view.index(of: 4) == nil)
    }

    @Test("the client's removal, move, added URL and choice become one room edit each, made on the list it was shown")
    func clientEdits() throws {
        var (guest, _) = Self.greeted()
        let removed = Self.edits(guest.received([.set([.playlistChange(files: ["ep1.mkv", "https://example.org/talk.mp4"], user: nil)])], now: 11))
        #expect(removed == [PlaylistEditRequest(id: removed.first?.id ?? -1, version: 7, current: 2, edit: .remove(2))])

        (guest, _) = Self.greeted()
        let moved = Self.edits(guest.received([.set([.playlistChange(files: ["ep2.mkv", "https://example.org/talk.mp4", "ep1.mkv"], user: nil)])], now: 11))
        // ep1 (id 1) right after the URL (id 3), counted without id 1: position 2 (before the hidden repeat).
        #expect(moved.map(\.edit) == [.move(1, to: 2)], "\(moved)")

        (guest, _) = Self.greeted()
        let added = Self.edits(guest.received([.set([.playlistChange(files: ["ep1.mkv", "http://example.org/new.webm", "ep2.mkv", "https://example.org/talk.mp4"], user: nil)])], now: 11))
        #expect(added.map(\.edit) == [.insert([PlaylistItem(url: "http://example.org/new.webm")], at: 1)], "\(added)")

        (guest, _) = Self.greeted()
        let chosen = Self.edits(guest.received([.set([.playlistIndex(index: 2, user: nil)])], now: 11))
        #expect(chosen.map(\.edit) == [.jump(3)])
        // The room's answer is echoed to the client that chose (its client loads the file then).
        var answered = Self.list
        answered.version = 8
        answered.current = 3
        let echo = guest.fromRoom(.playlist(answered, change: PlaylistChange(actor: "carol", kind: "jump", text: "carol skipped to #3"), requestID: chosen.first?.id), now: 12)
        #expect(T.sent(echo) == [.set([.playlistIndex(index: 2, user: "carol")])], "\(echo)")
        #expect(Self.edits(guest.received([.set([.playlistIndex(index: 2, user: nil)])], now: 12)).isEmpty, "the current entry already")
        #expect(Self.edits(guest.received([.set([.playlistChange(files: Self.names, user: nil)])], now: 11)).isEmpty, "the same list")
    }

    @Test("after its own removal, the client's index counts in its new list: the entry is found by name")
    func indexAfterRemoval() {
        var (guest, _) = Self.greeted()
        _ = guest.received([.set([.playlistChange(files: ["ep2.mkv", "https://example.org/talk.mp4"], user: nil)])], now: 11)
        // Index 1 of its new list is the URL (id 3), not ep2.
        #expect(Self.edits(guest.received([.set([.playlistIndex(index: 1, user: nil)])], now: 11)).map(\.edit) == [.jump(3)])
    }

    @Test("what names cannot say is refused in the client's chat and its list put back; so is the room's refusal")
    func refusals() {
        var (guest, _) = Self.greeted()
        let unknown = guest.received([.set([.playlistChange(files: Self.names + ["ep3.mkv"], user: nil)])], now: 11)
        #expect(Self.edits(unknown).isEmpty)
        #expect(Self.chat(unknown).contains("ep3.mkv is not in this Cowatch room's playlist"), "\(unknown)")
        #expect(T.sent(unknown).contains(.set([.playlistChange(files: Self.names, user: "movies")])), "put back: \(unknown)")
        #expect(T.sent(unknown).allSatisfy { if case .chat(let line) = $0 { line.message.count <= 150 } else { true } })
        // A line carries one command of a kind: each chat line goes on a line of its own.
        #expect(unknown.allSatisfy { action in
            guard case .syncplay(let commands) = action else { return true }
            return commands.filter { if case .chat = $0 { true } else { false } }.count <= 1
        }, "\(unknown)")

        let many = guest.received([.set([.playlistChange(files: ["https://example.org/talk.mp4"], user: nil)])], now: 11)
        #expect(Self.edits(many).isEmpty && Self.chat(many).contains("one entry"), "\(many)")

        (guest, _) = Self.greeted()
        let request = Self.edits(guest.received([.set([.playlistIndex(index: 0, user: nil)])], now: 11))
        let refused = guest.fromRoom(.refused(actionID: request.first?.id, code: "not-permitted", message: "only the owner and operators may edit this playlist"), now: 12)
        #expect(Self.chat(refused).contains("only the owner"))
        #expect(T.sent(refused).contains(.set([.playlistIndex(index: 1, user: "movies")])), "back on the room's entry: \(refused)")
    }

    @Test("an edit that met a list changed since (stale-playlist) is made again, once, on the list the room sends")
    func staleRetry() {
        var (guest, _) = Self.greeted()
        let first = Self.edits(guest.received([.set([.playlistChange(files: ["ep2.mkv", "https://example.org/talk.mp4"], user: nil)])], now: 11))
        #expect(first.map(\.edit) == [.remove(1)])
        let refused = guest.fromRoom(.refused(actionID: first.first?.id, code: "stale-playlist", message: "the playlist changed"), now: 12)
        #expect(T.sent(refused).isEmpty, "no put-back yet: \(refused)")
        var moved = Self.list
        moved.version = 8
        moved.current = 3
        let again = Self.edits(guest.fromRoom(.playlist(moved, change: nil, requestID: nil), now: 12))
        #expect(again.map(\.edit) == [.remove(1)] && again.first?.version == 8, "\(again)")
        // A second stale refusal puts the client's list back, saying why.
        let twice = guest.fromRoom(.refused(actionID: again.first?.id, code: "stale-playlist", message: "the playlist changed"), now: 13)
        #expect(Self.chat(twice).contains("changed") && T.sent(twice).contains(.set([.playlistChange(files: Self.names, user: "movies")])), "\(twice)")
    }

    @Test("the room's changes reach the client once each, with who made them")
    func roomChanges() {
        var (guest, _) = Self.greeted()
        var next = Self.list
        next.version = 8
        next.current = 3
        let jumped = guest.fromRoom(.playlist(next, change: PlaylistChange(actor: "alice", kind: "jump", text: "alice skipped to #3"), requestID: nil), now: 12)
        #expect(T.sent(jumped) == [.set([.playlistIndex(index: 2, user: "alice")])], "only the index changed: \(jumped)")
        next.version = 9
        next.entries.removeFirst()
        let removed = guest.fromRoom(.playlist(next, change: PlaylistChange(actor: "bob", kind: "remove", text: "bob removed #1"), requestID: nil), now: 13)
        #expect(T.sent(removed) == [
            .set([.playlistChange(files: ["ep2.mkv", "https://example.org/talk.mp4", "ep1.mkv"], user: "bob")]),
            .set([.playlistIndex(index: 1, user: "bob")]),
        ], "\(removed)")
    }

    @Test("a room with an empty list leaves the client its own: the empty list without a user, and its upload echoed")
    func emptyRoomList() {
        let (_, greeting) = Self.greeted(PlaylistState())
        #expect(T.sent(greeting).contains(.set([.playlistChange(files: [], user: nil)])))
        #expect(T.sent(greeting).contains(.set([.playlistIndex(index: nil, user: nil)])))
        var (guest, _) = Self.greeted(PlaylistState())
        let upload = guest.received([.set([.playlistChange(files: ["mine.mkv"], user: nil)])], now: 11)
        #expect(T.sent(upload) == [.set([.playlistChange(files: ["mine.mkv"], user: "carol")])] && Self.edits(upload).isEmpty)
    }

    @Test("without the room's list the greeting goes after 2 s; the room's chat history follows the Hello")
    func greetingWithoutList() {
        var guest = SyncplayGuest(configuration: .init())
        _ = guest.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 1)
        _ = guest.roomConnected(now: 1)
        _ = guest.fromRoom(.challenge(.init(nonce: "00", access: .open)), now: 1)
        _ = guest.fromRoom(.welcome(.init(name: "carol", room: "movies", timeline: T.playing, participants: [], activity: Activity(url: "f.mkv"))), now: 10)
        #expect(T.sent(guest.fromRoom(.chat(ChatLine(from: "alice", text: "earlier", history: true)), now: 10)).isEmpty)
        #expect(T.sent(guest.tick(now: 11)).isEmpty)
        let late = T.sent(guest.tick(now: 12.5))
        let hello = late.firstIndex { if case .hello = $0 { true } else { false } }
        let chat = late.firstIndex { if case .chat(let line) = $0 { line.message == "earlier" } else { false } }
        #expect(hello != nil && chat != nil && hello! < chat!, "\(late)")
    }
}
