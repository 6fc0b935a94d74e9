import CowatchCore
import Testing

/// `PlayerSide` driven directly: player facts in, actions out, time as a parameter.
@Suite("The player side of a room session")
struct PlayerSideTests {
    static let name = "ann"

    static func side(accept: OpenPolicy.Accept = .anyone) -> PlayerSide {
        PlayerSide(configuration: .init(name: name, openPolicy: OpenPolicy(accept: accept), openTimeout: 10))
    }

    static let film = Activity(id: 1, url: "https://example.org/film.mkv", title: "Film", openedBy: "bob")
    static let withFallback = Activity(
        id: 2, url: "https://example.org/film.mkv", title: "Film", fallbackURL: "https://mirror.example.org/film.mkv",
        openedBy: "bob")

    /// The side after the room switched to `activity` (loading it).
    static func loading(_ activity: Activity = film) -> PlayerSide {
        var side = side()
        _ = side.roomSwitched(to: activity, playerHas: "own.mkv", participants: [], now: 0)
        return side
    }

    // MARK: The person's changes

    @Test("a person's pause becomes a group request only when joined and on the room's media")
    func pauseRequests() {
        var side = Self.side()
        #expect(side.pauseChanged(true, joined: false, now: 0).isEmpty)
        #expect(side.pauseChanged(false, joined: true, now: 1) == [.request(.play)])
        #expect(side.pauseChanged(true, joined: true, now: 2) == [.request(.pause)])

        // Opening the room's switch: the person's pause is theirs alone, their speed the group's.
        var loading = Self.loading()
        #expect(loading.media.isLoading)
        #expect(loading.pauseChanged(false, joined: true, now: 1).isEmpty)
        #expect(loading.speedChanged(1.5, joined: true) == [.request(.speed(1.5))])

        // Refused: neither.
        var refused = Self.side()
        let ftp = Activity(id: 3, url: "ftp://example.org/x.mkv", openedBy: "bob")
        _ = refused.roomSwitched(to: ftp, playerHas: "own.mkv", participants: [], now: 0)
        #expect(refused.media == .refused(ftp))
        #expect(refused.pauseChanged(false, joined: true, now: 1).isEmpty)
        #expect(refused.speedChanged(1.5, joined: true).isEmpty)
    }

    @Test("a person's seek becomes a group seek only when joined and on the room's media")
    func seekRequests() {
        for (joined, media) in [(true, true), (false, true), (true, false)] {
            // Without the room's media: standing aside from an offered switch.
            var side = Self.side(accept: .ask)
            if !media { _ = side.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 0) }
            side.seekStarted(groupPosition: 10, now: 1)
            _ = side.playbackRestarted(position: 40, duration: 100, joined: joined, groupPosition: 10, now: 1.05)
            let actions = side.tick(joined: joined, now: 2)
            let expected: [PlayerSide.Action] = joined && media ? [.request(.seek(from: 10, to: 40))] : []
            #expect(actions == expected, "joined \(joined), room media \(media)")
        }
    }

    // MARK: Our own orders

    @Test("our own pause, speed and seek come back as echoes, not as the person's changes")
    func echoes() {
        var side = Self.side()
        #expect(side.orderPause(true, playerPaused: false, now: 0) == [.setPause(true)])
        side.pauseSet(true, at: 0.001)
        #expect(side.pauseChanged(true, joined: true, now: 0.01).isEmpty)
        // An unchanged player is not ordered (no event would come to recognise it by).
        #expect(side.orderPause(true, playerPaused: true, now: 0.02).isEmpty)

        #expect(side.orderSpeed(1.002, playerSpeed: 1, now: 0.1) == [.setSpeed(1.002)])
        #expect(side.speedChanged(1.002, joined: true).isEmpty)
        // The person's speed, however close, is theirs.
        #expect(side.speedChanged(1.003, joined: true) == [.request(.speed(1.003))])

        #expect(side.orderSeek(to: 20, now: 0.2) == [.fence(1)])
        #expect(side.fenceReturned(1, now: 0.201) == [.seek(to: 20)])
        side.seekStarted(groupPosition: 5, now: 0.21)
        #expect(side.isSeeking)
        #expect(side.playbackRestarted(position: 20, duration: 100, joined: true, groupPosition: 5, now: 0.3) == [.statusChanged])
        #expect(!side.isUserSeeking)
        #expect(side.tick(joined: true, now: 2).isEmpty)
    }

    @Test("a read of the person's change before its event is not drift to correct")
    func readingBeforeEvent() {
        var side = Self.side()
        _ = side.pauseChanged(false, joined: false, now: 0)
        _ = side.speedChanged(1, joined: false)
        #expect(side.reading(paused: false, speed: 1) == .init(stalled: false, seeking: false, source: .frameClock))
        #expect(side.reading(paused: true, speed: 1).seeking)
        side.tracksProbed(hasAudio: true)
        #expect(side.reading(paused: false, speed: 1).source == .audioPTS)
        #expect(side.reading(paused: true, speed: 1).source == nil)
        // Buffering, or without the room's media: stalled.
        _ = side.bufferingChanged(true)
        #expect(side.reading(paused: false, speed: 1).stalled)
        #expect(Self.loading().reading(paused: false, speed: 1).stalled)
    }

    // MARK: The seek fence

    @Test("a held seek is released by its fence, or after the fence timeout, and dropped when a person's seek came first")
    func fence() {
        var side = Self.side()
        #expect(side.orderSeek(to: -3, now: 0) == [.fence(1)])
        #expect(side.heldSeek?.target == 0)
        // Another fence's return (an older one) releases nothing.
        #expect(side.fenceReturned(7, now: 0.001).isEmpty)
        #expect(side.fenceReturned(1, now: 0.002) == [.seek(to: 0)])
        #expect(side.heldSeek == nil)
        side.seekStarted(groupPosition: 0, now: 0.01)
        _ = side.playbackRestarted(position: 0, duration: 100, joined: true, groupPosition: 0, now: 0.02)
        #expect(!side.isUserSeeking)

        // A person's seek event arrives before our fence: the correction was computed from it.
        #expect(side.orderSeek(to: 30, now: 1) == [.fence(2)])
        side.seekStarted(groupPosition: 30, now: 1.001)
        #expect(side.heldSeek == nil)
        #expect(side.fenceReturned(2, now: 1.002).isEmpty)

        // A fence that never comes: the seek is made after the timeout, not never.
        _ = side.orderSeek(to: 50, now: 2)
        #expect(side.tick(joined: true, now: 2.5).isEmpty)
        #expect(side.tick(joined: true, now: 3.1) == [.seek(to: 50)])

        // No fence to be had at all: at once.
        _ = side.orderSeek(to: 60, now: 4)
        #expect(side.fenceFailed(now: 4) == [.seek(to: 60)])
        side.seekFailed()
        #expect(!side.isSeeking)
    }

    // MARK: Seek gestures

    @Test("a drag becomes one group seek after the quiet period; a drag back to its start none")
    func drag() {
        var side = Self.side()
        var now = 10.0
        for position in stride(from: 12.0, through: 60, by: 6) {
            side.seekStarted(groupPosition: 10, now: now)
            _ = side.playbackRestarted(position: position, duration: 100, joined: true, groupPosition: 10, now: now + 0.02)
            #expect(side.tick(joined: true, now: now + 0.05).isEmpty)
            now += 0.05
        }
        #expect(side.isUserSeeking)
        #expect(side.reading(paused: false, speed: 1).seeking)
        #expect(side.tick(joined: true, now: now + 0.1).isEmpty)  // not quiet long enough
        #expect(side.tick(joined: true, now: now + 0.3) == [.request(.seek(from: 10, to: 60))])
        #expect(side.tick(joined: true, now: now + 1).isEmpty)  // once

        // Out and back again.
        side.seekStarted(groupPosition: 60, now: 20)
        _ = side.playbackRestarted(position: 80, duration: 100, joined: true, groupPosition: 60, now: 20.02)
        side.seekStarted(groupPosition: 60, now: 20.05)
        _ = side.playbackRestarted(position: 60.05, duration: 100, joined: true, groupPosition: 60, now: 20.07)
        #expect(side.tick(joined: true, now: 21).isEmpty)
        #expect(!side.isUserSeeking)
    }

    // MARK: Media

    @Test("a failed load moves to cannot-play and says so; the room is no longer waited for")
    func failedLoad() {
        var side = Self.side()
        let started = side.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 0)
        #expect(started == [.holdPaused, .load(url: Self.film.url), .statusChanged])
        #expect(side.media.loadingURL == Self.film.url)
        #expect(side.stall(now: 0) == .loading)
        #expect(side.waitForMe)

        side.fileStarted()
        side.logged(.init(level: "error", prefix: "ffmpeg", text: "HTTP error 404 Not Found"), now: 0.1)
        let failed = side.fileFailed(url: Self.film.url, mpvReason: "loading failed", failedOutput: nil, now: 0.2)
        #expect(side.media == .failed)
        #expect(!side.media.canPlay)
        #expect(!side.waitForMe)
        #expect(side.waitForMeSetting)  // the person's own setting is kept
        #expect(side.stall(now: 0.2) == nil)
        guard case .error(let error)? = failed.first else {
            Issue.record("no error said: \(failed)")
            return
        }
        #expect(error.code == .mediaUnavailable)
        #expect(error.message.contains("HTTP error 404"))
        #expect(error.message.contains("(Film); the group goes on without this player"))
        #expect(failed.last == .statusChanged)
        #expect(side.libavLines(since: 0).map(\.text) == ["HTTP error 404 Not Found"])

        // A reconnect's welcome repeating the activity changes nothing.
        #expect(side.roomSwitched(to: Self.film, playerHas: Self.film.url, participants: [], now: 1) == [.reportMedia])
        #expect(side.media == .failed)

        // A load that never answers fails by its deadline.
        var silent = Self.loading()
        #expect(silent.tick(joined: true, now: 5).isEmpty)
        let timedOut = silent.tick(joined: true, now: 10)
        guard case .error(let timeout)? = timedOut.first else {
            Issue.record("no error said: \(timedOut)")
            return
        }
        #expect(timeout.code == .timeout)
        #expect(silent.media == .failed)
    }

    @Test("a load's fallback is tried once, and serves; a fallback the policy refuses is not tried")
    func fallback() {
        var side = Self.loading(Self.withFallback)
        let fallback = Self.withFallback.fallbackURL!
        let tried = side.fileFailed(url: Self.withFallback.url, mpvReason: "loading failed", failedOutput: nil, now: 1)
        #expect(tried.count == 2)
        #expect(tried.last == .load(url: fallback))
        #expect(side.media.loadingURL == fallback)
        side.fileLoaded()
        let done = side.playbackRestarted(position: 0, duration: 100, joined: true, groupPosition: 0, now: 2)
        #expect(done == [.switched(url: fallback), .statusChanged, .reportMedia])
        #expect(side.media == .roomMedia)
        #expect(side.stall(now: 2) == nil)

        // mpv refuses both loadfiles: the failure names both.
        var refused = Self.loading(Self.withFallback)
        _ = refused.loadRefused("unsupported", now: 1)
        let failed = refused.loadRefused("unsupported", now: 1.1)
        #expect(refused.media == .failed)
        guard case .error(let error)? = failed.first else {
            Issue.record("no error said: \(failed)")
            return
        }
        #expect(error.message.contains("the fallback failed too"))

        // A local fallback is never opened for a room.
        var local = Self.loading(
            Activity(id: 4, url: "https://example.org/a.mkv", fallbackURL: "/home/bob/a.mkv", openedBy: "bob"))
        let once = local.fileFailed(url: "https://example.org/a.mkv", mpvReason: nil, failedOutput: nil, now: 1)
        #expect(local.media == .failed)
        #expect(!once.contains(.load(url: "/home/bob/a.mkv")))
    }

    @Test("an offered switch waits for accept; a stale accept is refused; the room going back brings the player back")
    func offers() throws {
        var side = Self.side(accept: .ask)
        let offered = side.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 0)
        #expect(side.media == .offered(Self.film, url: Self.film.url))
        #expect(offered.starts(with: [.holdPaused, .statusChanged, .offered(Self.film, url: Self.film.url)]))
        #expect(!side.waitForMe)
        // Judged once: the welcome of a reconnect says nothing again.
        #expect(side.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 1).isEmpty)

        #expect(throws: CowatchError.self) { _ = try side.acceptOffer(roomActivityID: 9, now: 2) }
        #expect(side.media == .failed)
        #expect(throws: CowatchError.self) { _ = try side.acceptOffer(roomActivityID: 1, now: 2) }

        var accepting = Self.side(accept: .ask)
        _ = accepting.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 0)
        let opened = try accepting.acceptOffer(roomActivityID: 1, now: 1)
        #expect(opened.contains(.load(url: Self.film.url)))
        #expect(accepting.media.isLoading)

        // The room goes back to the first media: no longer standing aside.
        var back = Self.side(accept: .ask)
        _ = back.roomSwitched(to: Self.film, playerHas: "own.mkv", participants: [], now: 0)
        let returned = back.roomSwitched(to: Activity(id: 0, url: "own.mkv"), playerHas: "own.mkv", participants: [], now: 1)
        #expect(returned == [.statusChanged, .reportMedia])
        #expect(back.media == .roomMedia)
        #expect(back.waitForMe)

        // Our own switch is always followed, even under ask.
        var mine = Self.side(accept: .ask)
        let own = Activity(id: 5, url: "https://example.org/b.mkv", openedBy: Self.name)
        _ = mine.roomSwitched(to: own, playerHas: "own.mkv", participants: [], now: 0)
        #expect(mine.media.isLoading)
    }

    @Test("a refused switch stands aside, says why, and drops a load under way")
    func refusal() {
        var side = Self.loading()
        let other = Activity(id: 6, url: "ftp://example.org/c.mkv", openedBy: "bob")
        let actions = side.roomSwitched(to: other, playerHas: Self.film.url, participants: [], now: 1)
        #expect(side.media == .refused(other))
        #expect(side.stall(now: 1) == nil)
        #expect(actions.prefix(2) == [.holdPaused, .statusChanged])
        #expect(actions.contains { if case .error(let error) = $0 { error.code == .openRefused } else { false } })
        // A file event of the dropped load is no longer the load's.
        side.fileLoaded()
        #expect(side.playbackRestarted(position: 0, duration: nil, joined: true, groupPosition: nil, now: 2) == [.statusChanged])
        #expect(side.media == .refused(other))
    }

    @Test("an unpause on a scheduled instant is timed against it; a video-only speed change waits for a gap between frames")
    func transitions() {
        var side = Self.side()
        side.transitionInstant = 5
        _ = side.orderPause(false, playerPaused: true, now: 4.998)
        side.pauseSet(false, at: 5.0015)
        #expect(abs((side.startLateness ?? 0) - 0.0015) < 1e-9)
        side.transitionInstant = nil

        // Frames every 40 ms, the last at 10.000: the next is due at 10.040.
        for frame in 0..<5 {
            let at = 9.84 + Double(frame) * 0.04
            side.frameShown(position: at - 9, at: at, paused: false, speed: 1)
        }
        #expect(side.orderSpeed(1.001, playerSpeed: 1, now: 10.035).isEmpty)  // 5 ms before a frame
        #expect(side.orderSpeed(1.001, playerSpeed: 1, now: 10.01) == [.setSpeed(1.001)])
        side.transitionInstant = 10.035
        #expect(side.orderSpeed(1.002, playerSpeed: 1.001, now: 10.035) == [.setSpeed(1.002)])
    }
}
