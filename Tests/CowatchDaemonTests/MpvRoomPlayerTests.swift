import CowatchCore
import CowatchMpv
import CowatchTesting
import Testing

/// The room's player seam over mpv (`MpvRoomPlayer`): each typed call becomes the mpv command or
/// property it stands for, checked on a player that records what it was asked.
@Suite("Room player seam over mpv")
struct MpvRoomPlayerTests {
    @Test("a seek is absolute and exact")
    func seek() throws {
        let mpv = RecordingPlayer()
        try MpvRoomPlayer(mpv).seek(to: 90.5)
        #expect(mpv.calls == [.command(["seek", "90.5", "absolute+exact"])])
    }

    @Test("a fence is a script message to this client that comes back as one")
    func fence() throws {
        let mpv = RecordingPlayer()
        try MpvRoomPlayer(mpv).fence(7)
        #expect(mpv.calls == [.command(["script-message-to", "cowatchd", "cowatch-fence", "7"])])
        #expect(PlayerFence.number(in: ["cowatch-fence", "7"]) == 7)
        #expect(PlayerFence.number(in: ["cowatch-chat", "7"]) == nil)
        #expect(PlayerFence.number(in: ["cowatch-fence", "x"]) == nil)
    }

    @Test("OSD text goes as an argument list, so ${…} in it is shown, not expanded")
    func showText() throws {
        let mpv = RecordingPlayer()
        try MpvRoomPlayer(mpv).showText("<alice> ${path}", milliseconds: 4000)
        #expect(mpv.calls == [.command(["show-text", "<alice> ${path}", "4000"])])
    }

    @Test("pause and speed are the properties; a load replaces and returns the entry id")
    func commands() throws {
        let mpv = RecordingPlayer()
        let player = MpvRoomPlayer(mpv)
        try player.setPaused(true)
        try player.setSpeed(1.25)
        mpv.loadResult = .map(["playlist_entry_id": .int64(3)])
        #expect(try player.load("https://example.org/film.mkv") == 3)
        mpv.loadResult = .none
        #expect(try player.load("film.mkv") == nil)  // an mpv without entry ids
        #expect(mpv.calls == [
            .setFlag("pause", true), .setDouble("speed", 1.25),
            .command(["loadfile", "https://example.org/film.mkv", "replace", "access-references=no,load-unsafe-playlists=no"]),
            .command(["loadfile", "film.mkv", "replace"]),
        ])
    }

    @Test("a refused command throws mpv's error")
    func refused() {
        let mpv = RecordingPlayer()
        mpv.refuse = MpvError(code: -12, operation: "command seek")
        #expect(throws: MpvError.self) { try MpvRoomPlayer(mpv).seek(to: 1) }
    }

    @Test("reads: the fine clock is audio-pts, the shown frame time-pos; tracks from current-tracks")
    func reads() {
        let mpv = RecordingPlayer()
        mpv.doubles = ["audio-pts": 12.3456, "time-pos": 12.32, "duration": 600, "speed": 1]
        mpv.flags = ["pause": false]
        mpv.nodes = ["current-tracks/audio": .map(["id": .int64(1)]), "current-tracks/video": .none]
        let player = MpvRoomPlayer(mpv)
        #expect(player.audioPosition == 12.3456)
        #expect(player.shownPosition == 12.32)
        #expect(player.duration == 600)
        #expect(player.speed == 1)
        #expect(player.paused == false)
        #expect(player.hasAudio)
        #expect(!player.hasVideo)
        #expect(player.mediaTitle == nil)  // unavailable: nil, not an error
    }

    @Test("the simulated player's typed face moves like its mpv face")
    func simulatedSeam() async throws {
        let clock = ManualClock()
        let player = SimulatedPlayer(seekLatency: 0.01, clock: clock)
        _ = player.load("sim://film")
        #expect(player.load("sim://film") == 2)  // entry ids count up, as mpv's
        player.setPaused(false)
        player.setSpeed(2)
        #expect(player.paused == false && player.speed == 2)
        player.showText("hello", milliseconds: 1000)
        #expect(player.osdTexts == ["hello"])
        player.seek(to: 30)
        #expect(player.orderedSeeks == 1)
    }
}

/// A `MediaPlayer` that records every command and property write, and answers reads from its
/// tables (a missing entry is mpv's "property unavailable").
///
/// Threading: any thread; state under a lock.
private final class RecordingPlayer: MediaPlayer {
    enum Call: Equatable {
        case command([String])
        case setFlag(String, Bool)
        case setDouble(String, Double)
        case setString(String, String)
    }

    private struct State {
        var calls: [Call] = []
        var loadResult: MpvNode = .none
        var refuse: MpvError?
        var doubles: [String: Double] = [:]
        var flags: [String: Bool] = [:]
        var nodes: [String: MpvNode] = [:]
    }

    private let state = Locked(State())
    let events = AsyncStream<MpvEvent> { $0.finish() }
    let clientName = "cowatchd"

    var calls: [Call] { state.withLock { $0.calls } }
    var loadResult: MpvNode {
        get { state.withLock { $0.loadResult } }
        set { state.withLock { $0.loadResult = newValue } }
    }
    var refuse: MpvError? {
        get { state.withLock { $0.refuse } }
        set { state.withLock { $0.refuse = newValue } }
    }
    var doubles: [String: Double] {
        get { state.withLock { $0.doubles } }
        set { state.withLock { $0.doubles = newValue } }
    }
    var flags: [String: Bool] {
        get { state.withLock { $0.flags } }
        set { state.withLock { $0.flags = newValue } }
    }
    var nodes: [String: MpvNode] {
        get { state.withLock { $0.nodes } }
        set { state.withLock { $0.nodes = newValue } }
    }

    private static let unavailable = MpvError(code: -10, operation: "get_property")

    private func record(_ call: Call) throws(MpvError) {
        if let refused = state.withLock({ $0.refuse }) { throw refused }
        state.withLock { $0.calls.append(call) }
    }

    func command(_ arguments: [String]) throws(MpvError) { _ = try commandReturning(arguments) }

    func commandReturning(_ arguments: [String]) throws(MpvError) -> MpvNode {
        try record(.command(arguments))
        return arguments.first == "loadfile" ? loadResult : .none
    }

    func setString(_ name: String, _ value: String) throws(MpvError) { try record(.setString(name, value)) }
    func setDouble(_ name: String, _ value: Double) throws(MpvError) { try record(.setDouble(name, value)) }
    func setFlag(_ name: String, _ value: Bool) throws(MpvError) { try record(.setFlag(name, value)) }

    func getDouble(_ name: String) throws(MpvError) -> Double {
        guard let value = doubles[name] else { throw Self.unavailable }
        return value
    }

    func getFlag(_ name: String) throws(MpvError) -> Bool {
        guard let value = flags[name] else { throw Self.unavailable }
        return value
    }

    func getString(_ name: String) throws(MpvError) -> String { throw Self.unavailable }

    func getNode(_ name: String) throws(MpvError) -> MpvNode {
        guard let value = nodes[name] else { throw Self.unavailable }
        return value
    }

    func observe(_ name: String) throws(MpvError) {}
    func shutdown() async {}
}
