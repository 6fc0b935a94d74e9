import Testing

@testable import CowatchCore

/// The participant's side of the room's playlist (`RoomCoordinator+Playlist.swift`): edits made
/// on the list as we have it, their answers, availability, and end-of-file reports.
@Suite("A participant follows the room's playlist")
struct ParticipantPlaylistTests {
    static let film = Activity(url: "/films/night.mkv")

    /// A coordinator welcomed into room r by a server that speaks `features`.
    func joined(features: [String] = WireFeature.all) -> RoomCoordinator {
        RoomCoordinator.welcomed(name: "alice", activity: Self.film, features: features)
    }

    static func entry(_ id: Int) -> PlaylistEntry {
        PlaylistEntry(id: id, media: .url("https://media.example/\(id).mkv"), addedBy: "bob")
    }

    @Test("an edit carries the list's version and current entry; the new list naming it answers it")
    func editAnswered() {
        var coordinator = joined()
        let state = PlaylistState(version: 4, entries: [Self.entry(1), Self.entry(2)], current: 2)
        let first = coordinator.received(.playlist(state, change: nil, requestID: nil), now: 1)
        #expect(first == [.playlist(state, change: nil)])
        let (id, actions) = coordinator.playlistEdit(.next)
        #expect(actions == [.send(.playlistEdit(PlaylistEditRequest(id: id, version: 4, current: 2, edit: .next)))])
        var next = state
        next.version = 5
        let change = PlaylistChange(actor: "alice", kind: "next", text: "alice skipped to #2")
        let answered = coordinator.received(.playlist(next, change: change, requestID: id), now: 2)
        #expect(answered == [.playlist(next, change: change), .actionApplied(id: id)])
        #expect(coordinator.playlist == next)
    }

    @Test("a refused edit is answered with the refusal; an older list changes nothing")
    func refusedAndStale() {
        var coordinator = joined()
        let state = PlaylistState(version: 7, entries: [Self.entry(1)])
        _ = coordinator.received(.playlist(state, change: nil, requestID: nil), now: 1)
        let (id, _) = coordinator.playlistEdit(.remove(1))
        let refused = coordinator.received(.refused(actionID: id, code: "stale-playlist", message: "the list changed"), now: 2)
        #expect(refused == [.actionRefused(id: id, CowatchError(.stalePlaylist, "the list changed"))])
        #expect(coordinator.received(.playlist(PlaylistState(version: 6), change: nil, requestID: nil), now: 3).isEmpty)
        #expect(coordinator.playlist?.version == 7)
    }

    @Test("without the feature, or before the welcome, an edit is refused at once and nothing is sent")
    func refusedAtOnce() {
        var old = joined(features: WireFeature.all.filter { $0 != WireFeature.playlist })
        let (id, actions) = old.playlistEdit(.clear)
        #expect(actions.count == 1)
        guard case .actionRefused(id, let error)? = actions.first else {
            Issue.record("not refused: \(actions)")
            return
        }
        #expect(error.code == .unsupported)
        var outside = RoomCoordinator(name: "alice", room: "r", activity: Self.film)
        let (outsideID, outsideActions) = outside.playlistEdit(.clear)
        #expect(outsideActions.count == 1)
        if case .actionRefused(outsideID, let error)? = outsideActions.first {
            #expect(error.code == .notInRoom)
        } else {
            Issue.record("not refused: \(outsideActions)")
        }
    }

    @Test("what we have is said for the list we have, and an availability report updates it")
    func availability() {
        var coordinator = joined()
        let state = PlaylistState(version: 3, entries: [Self.entry(1), Self.entry(2)])
        _ = coordinator.received(.playlist(state, change: nil, requestID: nil), now: 1)
        #expect(coordinator.playlistHave([2], version: 3) == [.send(.playlistHave(version: 3, have: [2]))])
        #expect(coordinator.playlistHave([2], version: 2).isEmpty)
        let bob = PlaylistAvailability(name: "bob", marks: [.lacks, .has])
        let actions = coordinator.received(.playlistAvailability(bob, version: 3), now: 2)
        #expect(coordinator.playlist?.availability == [bob])
        #expect(actions.count == 1)
        #expect(coordinator.received(.playlistAvailability(bob, version: 2), now: 3).isEmpty)
    }

    @Test("the end of the media is told only while the room plays the playlist's entry")
    func endOfEntry() {
        var coordinator = joined()
        #expect(coordinator.playlistMediaEnded(position: 6).isEmpty)
        let state = PlaylistState(version: 1, entries: [Self.entry(1)], current: 1, activity: coordinator.activity.id)
        _ = coordinator.received(.playlist(state, change: nil, requestID: nil), now: 1)
        #expect(coordinator.playlistMediaEnded(position: 6) == [.send(.playlistEnded(activity: coordinator.activity.id, position: 6))])
        #expect(coordinator.playlistMediaEnded(position: .nan).isEmpty)
        var elsewhere = state
        elsewhere.version = 2
        elsewhere.activity = coordinator.activity.id + 1
        _ = coordinator.received(.playlist(elsewhere, change: nil, requestID: nil), now: 2)
        #expect(coordinator.playlistMediaEnded(position: 6).isEmpty)
    }
}
