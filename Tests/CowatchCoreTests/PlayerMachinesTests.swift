import CowatchCore
import Testing

@Suite("The daemon's player-side machines")
struct PlayerMachinesTests {
    // MARK: Echo tracking

    @Test("our pause and speed orders are recognised by value; a person's change is not, however close")
    func echoes() {
        var tracker = PlayerEchoTracker()
        tracker.orderedPause(true, now: 0)
        let r1 = tracker.pauseReported(true, now: 0.01)
        #expect(r1)
        let r2 = tracker.pauseReported(false, now: 0.02)
        #expect(!r2)  // nobody of ours ordered play
        tracker.orderedSpeed(1.0012)
        tracker.orderedSpeed(1.0008)
        let r3 = tracker.speedReported(1.0008)
        #expect(r3)  // mpv skipped the intermediate value
        let r4 = tracker.speedReported(1.0012)
        #expect(!r4)  // consumed with the later one
        // A large drift nudge is ours because we ordered it, not because it is small.
        tracker.orderedSpeed(1.05)
        let r5 = tracker.speedReported(1.05)
        #expect(r5)
        // A person's 1.01 is theirs although it lies within any correction band.
        let r6 = tracker.speedReported(1.01)
        #expect(!r6)
    }

    @Test("a person's change read before mpv reports it is not explained, so it is not corrected away")
    func changeInFlight() {
        var tracker = PlayerEchoTracker()
        _ = tracker.pauseReported(false, now: 0)
        _ = tracker.speedReported(1)
        #expect(tracker.explains(paused: false, speed: 1))
        // Our own orders are explained at once, before their events.
        tracker.orderedSpeed(1.002)
        #expect(tracker.explains(paused: false, speed: 1.002))
        _ = tracker.speedReported(1.002)
        // A person pauses in the mpv window: the property reads true, the event is still queued.
        #expect(!tracker.explains(paused: true, speed: 1.002))
        // Nor a person's speed.
        #expect(!tracker.explains(paused: false, speed: 1.5))
        // The event comes: explained, and it is theirs, not an echo.
        let echo = tracker.pauseReported(true, now: 0.1)
        #expect(!echo)
        #expect(tracker.explains(paused: true, speed: 1.002))
        // Forgetting the orders keeps what the player holds.
        tracker.orderedPause(false, now: 0.2)
        tracker.reset()
        #expect(tracker.explains(paused: false, speed: 1.002))
    }

    @Test("a person's seek merged into ours is told by where it lands")
    func mergedSeek() {
        var tracker = PlayerEchoTracker()
        // Ours lands where we sent it.
        tracker.orderedSeek(to: 12, now: 0)
        let m1 = tracker.seekReported(now: 0.01)
        #expect(m1)
        let m2 = tracker.seekLanded(at: 12.02, duration: 75)
        #expect(!m2)
        // A person's seek to 30 queued behind ours: mpv runs one seek, reported once, landing at 30.
        tracker.orderedSeek(to: 12, now: 1)
        let m3 = tracker.seekReported(now: 1.01)
        #expect(m3)
        let m4 = tracker.seekLanded(at: 30, duration: 75)
        #expect(m4)
        // Two of ours merged land at the later one.
        tracker.orderedSeek(to: 12, now: 2)
        tracker.orderedSeek(to: 40, now: 2.001)
        let m5 = tracker.seekReported(now: 2.01)
        #expect(m5)
        let m6 = tracker.seekLanded(at: 40, duration: 75)
        #expect(!m6)
        // Past the end a seek lands short: no proof of anyone's.
        tracker.orderedSeek(to: 80, now: 3)
        let m7 = tracker.seekReported(now: 3.01)
        #expect(m7)
        let m8 = tracker.seekLanded(at: 74.9, duration: 75)
        #expect(!m8)
        // A landing with no seek of ours reported is the person's business (their own seek event).
        let m9 = tracker.seekLanded(at: 5, duration: 75)
        #expect(!m9)
    }

    @Test("an order reported late (a loaded machine) is still ours; one never reported expires")
    func lateAndLost() {
        var tracker = PlayerEchoTracker()
        tracker.orderedSpeed(0.999)
        let r7 = tracker.speedReported(0.999)
        #expect(r7)  // speeds never expire: matched by value only
        tracker.orderedPause(false, now: 0)
        let r8 = tracker.pauseReported(false, now: 0.9)
        #expect(r8)
        tracker.orderedPause(true, now: 1)
        // mpv merged it away; 2 s later the person pauses: theirs.
        let r9 = tracker.pauseReported(true, now: 3)
        #expect(!r9)
        tracker.orderedSeek(to: 20, now: 5)
        #expect(tracker.awaitsSeek)
        let r10 = tracker.seekReported(now: 5.05)
        #expect(r10)
        let r11 = tracker.seekReported(now: 5.1)
        #expect(!r11)  // the next one is the person's
        tracker.orderedSeek(to: 20, now: 6)
        let r12 = tracker.seekReported(now: 8)
        #expect(!r12)  // expired
    }

    @Test("a new file forgets our seeks, not our speed and pause orders: their reports still come after the switch")
    func forgetSeeksKeepsSpeed() {
        var tracker = PlayerEchoTracker()
        tracker.orderedSpeed(0.9)  // a drift correction, just before the room switched media
        tracker.orderedPause(true, now: 0)
        tracker.orderedSeek(to: 20, now: 0)
        tracker.forgetSeeks()
        let speedEcho = tracker.speedReported(0.9)
        let pauseEcho = tracker.pauseReported(true, now: 0.1)
        let seekEcho = tracker.seekReported(now: 0.1)
        #expect(speedEcho && pauseEcho && !seekEcho)
        // And through the player side: a switch, then the correction's late report is no request.
        var side = PlayerSide(configuration: .init(name: "bob"))
        _ = side.orderSpeed(0.9, playerSpeed: 1, now: 0)
        side.forgetSeeks()
        let echo = side.speedChanged(0.9, joined: true)
        let persons = side.speedChanged(1.5, joined: true)
        #expect(echo.isEmpty)
        #expect(persons == [.request(.speed(1.5))])
    }

    @Test("reset forgets every order")
    func reset() {
        var tracker = PlayerEchoTracker()
        tracker.orderedPause(true, now: 0)
        tracker.orderedSpeed(1.5)
        tracker.orderedSeek(to: 20, now: 0)
        tracker.reset()
        let r13 = tracker.pauseReported(true, now: 0.1)
        #expect(!r13)
        let r14 = tracker.speedReported(1.5)
        #expect(!r14)
        let r15 = tracker.seekReported(now: 0.1)
        #expect(!r15)
    }

    // MARK: Seek gestures

    @Test("a seek-bar drag of 47 seeks is one group seek, from where the group was to where it settled")
    func drag() {
        var seeks = UserSeekCoalescer(quietPeriod: 0.2)
        var now = 10.0
        var gestures: [UserSeekCoalescer.Gesture] = []
        for step in 0..<47 {
            seeks.seekStarted(groupPosition: 40 + (now - 10), now: now)
            now += 0.016
            seeks.landed(at: 40 + Double(step) * 0.5, now: now)
            if let gesture = seeks.poll(now: now) { gestures.append(gesture) }
            now += 0.016
        }
        #expect(gestures.isEmpty)  // still dragging
        let r16 = seeks.poll(now: now + 0.1)
        #expect(r16 == nil)
        let done = seeks.poll(now: now + 0.25)
        #expect(done == .init(from: 40, to: 63))
        let r17 = seeks.poll(now: now + 1)
        #expect(r17 == nil)  // once
    }

    @Test("a gesture that ends where it began is no seek; one still in flight is not finished")
    func noOpAndInFlight() {
        var seeks = UserSeekCoalescer(quietPeriod: 0.2, noOpDistance: 0.1)
        seeks.seekStarted(groupPosition: 40, now: 0)
        seeks.landed(at: 40.04, now: 0.02)
        let r18 = seeks.poll(now: 1)
        #expect(r18 == nil)
        #expect(!seeks.isActive)
        seeks.seekStarted(groupPosition: 40, now: 2)
        #expect(seeks.deadline == nil)
        let r19 = seeks.poll(now: 5)
        #expect(r19 == nil)  // never landed: not a finished gesture
        seeks.landed(at: 70, now: 5.01)
        let r20 = seeks.poll(now: 5.3)
        #expect(r20 == .init(from: 40, to: 70))
    }

    @Test("a landing with none of the gesture's seeks in flight (a seek we ordered) does not move its target")
    func ownLandingIgnored() {
        var seeks = UserSeekCoalescer(quietPeriod: 0.2)
        seeks.seekStarted(groupPosition: 10, now: 0)
        seeks.landed(at: 30, now: 0.05)
        seeks.landed(at: 10, now: 0.1)  // our snap back to the group: not the person's
        let gesture = seeks.poll(now: 1)
        #expect(gesture == .init(from: 10, to: 30))
    }

    // MARK: Stalls

    @Test("a person's seek is a stall only once slow; ours never; loading and buffering at once")
    func stalls() {
        var stalls = StallTracker(slowSeek: 0.5)
        stalls.seekStarted(ours: false, now: 0)
        #expect(stalls.stall(now: 0.4) == nil)
        #expect(stalls.stall(now: 0.6) == .seeking)
        stalls.seekEnded()
        stalls.seekStarted(ours: true, now: 1)
        #expect(stalls.stall(now: 5) == nil)
        stalls.buffering = true
        #expect(stalls.stall(now: 5) == .buffering)
        stalls.loading = true
        #expect(stalls.stall(now: 5) == .loading)
    }

    // MARK: Loading

    @Test("a load finishes at the first frame after file-loaded")
    func loadFinishes() {
        var load = MediaLoad(url: "a.mkv", fallback: nil, timeout: 5)
        let r21 = load.start(now: 0)
        #expect(r21 == [.load(url: "a.mkv")])
        let r22 = load.playbackRestarted()
        #expect(r22.isEmpty)  // a restart of the old file
        load.fileWasLoaded()
        let r23 = load.playbackRestarted()
        #expect(r23 == [.finished(url: "a.mkv")])
        #expect(!load.isUnderWay)
        let r24 = load.tick(now: 100)
        #expect(r24.isEmpty)
    }

    @Test("a failure tries the fallback once; its failure names both")
    func fallback() {
        var load = MediaLoad(url: "http://a/x", fallback: "http://b/x", timeout: 5)
        _ = load.start(now: 0)
        let first = load.endedWithError(CowatchError(.mediaUnavailable, "cannot open http://a/x: HTTP error 404"), now: 1)
        #expect(first.count == 2)
        #expect(first.last == .load(url: "http://b/x"))
        #expect(load.current == "http://b/x")
        #expect(load.deadline == 6)
        let second = load.tick(now: 6)
        guard case .failed(let error)? = second.first else {
            Issue.record("expected failure, got \(second)")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.message.contains("HTTP error 404"))
        #expect(error.message.contains("the fallback failed too"))
    }

    @Test("a source that never answers times out; a fallback equal to the URL is not tried")
    func timeout() {
        var load = MediaLoad(url: "x", fallback: "x", timeout: 2)
        _ = load.start(now: 0)
        let r25 = load.tick(now: 1.9)
        #expect(r25.isEmpty)
        let actions = load.tick(now: 2)
        #expect(actions.count == 1)
        if case .failed(let error)? = actions.first { #expect(error.code == .timeout) } else { Issue.record("\(actions)") }
    }

    // MARK: Failure reasons

    @Test("an output that cannot start is blamed, not the film")
    func outputBlamed() {
        var reason = LoadFailureReason()
        reason.logged(.init(level: "error", prefix: "vo", text: "Error opening/initializing the selected video_out (--vo) device."))
        let error = reason.explain(url: "film.mkv", mpvReason: "loading failed")
        #expect(error.code == .playerError)
        #expect(error.message.contains("video output"))
        #expect(error.message.contains("--vo"))
        #expect(!error.message.contains("cannot open film.mkv"))
        let byCode = LoadFailureReason().explain(url: "film.mkv", mpvReason: "audio output initialization failed", failedOutput: "audio")
        #expect(byCode.code == .playerError)
        #expect(byCode.message.contains("--ao"))
    }

    @Test("an HTTP 404 is the reason, not the youtube-dl hook that failed after it")
    func httpBeforeHook() {
        var reason = LoadFailureReason()
        reason.logged(.init(level: "error", prefix: "ffmpeg", text: "http: HTTP error 404 Not Found"))
        reason.logged(.init(level: "error", prefix: "stream", text: "Failed to open http://127.0.0.1:8/x.mkv."))
        reason.logged(.init(level: "error", prefix: "ytdl_hook", text: "ERROR: Unsupported URL: http://127.0.0.1:8/x.mkv"))
        reason.logged(.init(level: "error", prefix: "ytdl_hook", text: "youtube-dl failed: unexpected error occurred"))
        let error = reason.explain(url: "http://127.0.0.1:8/x.mkv", mpvReason: "loading failed")
        #expect(error.code == .mediaUnavailable)
        #expect(error.message.contains("HTTP error 404"))
        #expect(!error.message.contains("youtube-dl"))
        reason.reset()
        #expect(reason.explain(url: "y", mpvReason: "unrecognized file format").message == "cannot open y: unrecognized file format")
    }

    // MARK: Times in notices

    @Test("notice times truncate like mpv's OSD, never round up")
    func truncatedTimes() {
        #expect(MediaTime.format(3.56) == "0:00:03")
        #expect(MediaTime.format(59.999) == "0:00:59")
        #expect(MediaTime.format(4.0) == "0:00:04")
        #expect(MediaTime.format(3.9999999999) == "0:00:04")  // 4 s stored inexactly
        #expect(MediaTime.format(62.04, fraction: 1) == "0:01:02.0")
    }
}

@Suite("OSD notices")
struct OSDStackTests {
    @Test("notices stack, oldest first, each for its own time; at most four")
    func stack() {
        var stack = OSDStack(capacity: 4, lifetime: 4)
        let first = stack.push("bob paused at 0:00:03", now: 0)
        #expect(first.text == "bob paused at 0:00:03")
        #expect(first.milliseconds == 4000)
        let second = stack.push("carol joined", now: 1)
        #expect(second.text == "bob paused at 0:00:03\ncarol joined")
        #expect(second.milliseconds == 4000)
        let later = stack.push("dave joined", now: 4.5)  // bob's line has gone
        #expect(later.text == "carol joined\ndave joined")
        for index in 0..<6 { _ = stack.push("line \(index)", now: 5) }
        #expect(stack.live(at: 5) == ["line 2", "line 3", "line 4", "line 5"])
        let long = stack.push("kicked", seconds: 10, now: 6)
        #expect(long.milliseconds == 10_000)
    }

    @Test("a keyed line takes the place of the live one with its key (a countdown's next second); others stay")
    func keyed() {
        var stack = OSDStack(capacity: 4, lifetime: 4)
        _ = stack.push("bob skipped to #3", now: 0)
        _ = stack.push("Episode 3 in 3 s", seconds: 1.1, replacing: "countdown", now: 0)
        let next = stack.push("Episode 3 in 2 s", seconds: 1.1, replacing: "countdown", now: 1)
        #expect(next.text == "bob skipped to #3\nEpisode 3 in 2 s")
        #expect(stack.live(at: 1) == ["bob skipped to #3", "Episode 3 in 2 s"])
        _ = stack.push("carol joined", replacing: "other", now: 1.5)
        #expect(stack.live(at: 1.5).count == 3)
    }

    @Test("a redraw repeats the live lines with a trailing space, for what is left; stale once another line comes")
    func redraw() {
        var stack = OSDStack(capacity: 4, lifetime: 4)
        #expect(stack.redraw(now: 0) == nil)
        _ = stack.push("alice paused at 0:00:42", now: 0)
        let generation = stack.generation
        let again = stack.redraw(now: 0.15)
        #expect(again?.text == "alice paused at 0:00:42 ")
        #expect(again?.milliseconds == 3850)
        _ = stack.push("bob joined", now: 0.1)
        #expect(stack.generation != generation)
        #expect(stack.redraw(now: 5) == nil)
    }
}
