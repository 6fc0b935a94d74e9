import Testing

@testable import CowatchCore

/// Issue 25: which offer a participant plays the room's media from — when it lacks the media,
/// and when the room said its own copy differs — and what it tells the room of its stream.
@Suite("Streams: the participant's choice of offer")
struct StreamChoiceTests {
    static let film = Activity(url: "/films/night.mkv")

    static func identity(_ byte: String, size: Int = 1000) -> MediaIdentity {
        MediaIdentity(size: size, fingerprint: String(repeating: byte, count: 32), duration: 80, name: "night.mkv")
    }

    /// A coordinator welcomed into room r by a server that speaks `features`.
    func joined(features: [String] = WireFeature.all) -> RoomCoordinator {
        RoomCoordinator.welcomed(name: "bob", activity: Self.film, features: features)
    }

    @Test("a lacking member takes the playlist entry's file, else the activity's offer, never its own, the first in order")
    func lackingChoice() {
        let entry = Self.identity("aa")
        let offers = [
            SharedMedia(by: "bob", file: entry, activity: 0),
            SharedMedia(by: "carol", file: Self.identity("bb"), activity: 0),
            SharedMedia(by: "dan", file: entry, activity: nil),
        ]
        #expect(StreamChoice.offer(for: 0, entry: entry, among: offers, me: "bob")?.by == "dan")
        #expect(StreamChoice.offer(for: 0, entry: nil, among: offers, me: "bob")?.by == "carol")
        #expect(StreamChoice.offer(for: 3, entry: nil, among: offers, me: "bob") == nil)
    }

    @Test("a differing copy is replaced only by an offer of the activity from a sharer the room did not name, and not by our own file")
    func replacementChoice() {
        let own = Self.identity("aa")
        let offers = [
            SharedMedia(by: "carol", file: Self.identity("cc"), activity: 0),
            SharedMedia(by: "dan", file: own, activity: 0),
            SharedMedia(by: "erin", file: Self.identity("ee"), activity: 0),
        ]
        let differing: Set<String> = ["bob", "carol"]
        #expect(StreamChoice.replacement(for: 0, among: offers, me: "bob", differing: differing, own: own)?.by == "erin")
        #expect(StreamChoice.replacement(for: 0, among: offers, me: "bob", differing: differing, own: nil)?.by == "dan")
        #expect(StreamChoice.replacement(for: 1, among: offers, me: "bob", differing: differing, own: own) == nil)
        #expect(StreamChoice.replacement(for: 0, among: Array(offers.prefix(2)), me: "bob", differing: differing, own: own) == nil)
    }

    @Test("mismatch notices name who differs until the activity changes")
    func differingCopies() {
        var coordinator = joined()
        _ = coordinator.received(.notice(Notice(actor: "bob", action: .mismatch, others: ["alice"], detail: "duration 1:20 vs 1:22")), now: 1)
        #expect(coordinator.ownCopyDiffers)
        _ = coordinator.received(.notice(Notice(actor: "carol", action: .mismatch, others: ["alice"])), now: 1)
        #expect(coordinator.copiesDiffering == ["bob", "carol"])
        _ = coordinator.received(.notice(Notice(actor: "carol", action: .pause, position: 3)), now: 1)
        #expect(coordinator.copiesDiffering == ["bob", "carol"], "other notices change nothing")
        let next = GroupTimeline(seq: 2, position: 0, reference: 2, rate: 1, playing: false)
        _ = coordinator.received(.applied(timeline: next, notice: nil, actionID: nil, activity: Activity(id: 1, url: "https://media.example/b.mkv")), now: 2)
        #expect(coordinator.copiesDiffering.isEmpty)
        #expect(!coordinator.ownCopyDiffers)
    }

    @Test("the stream's status goes to a server that speaks stream, once welcomed; never to one without")
    func streamStatus() {
        let report = StreamReport(from: "alice", aheadBytes: 1 << 20, aheadSeconds: 4, rate: 1e6)
        #expect(joined().streamStatus(report) == [.send(.streamStatus(report))])
        #expect(joined().streamStatus(nil) == [.send(.streamStatus(nil))])
        #expect(joined(features: WireFeature.all.filter { $0 != WireFeature.stream }).streamStatus(report).isEmpty)
        #expect(RoomCoordinator(name: "bob", room: "r", activity: Self.film).streamStatus(report).isEmpty)
    }
}
