import CowatchTestSupport
import Testing

@testable import CowatchCore

@Suite("Group timeline")
struct GroupTimelineTests {
    @Test("position advances only while playing and only after the reference instant")
    func positions() {
        let playing = GroupTimeline(seq: 1, position: 10, reference: 100, rate: 1.5, playing: true)
        #expect(playing.position(at: 102) == 13)
        #expect(playing.position(at: 99) == 10)
        let paused = GroupTimeline(seq: 2, position: 10, reference: 100, rate: 1.5, playing: false)
        #expect(paused.position(at: 200) == 10)
    }

    @Test("a scheduled change leaves the previous timeline ruling until it takes effect")
    func scheduled() {
        var pair = TimelinePair(GroupTimeline(seq: 1, position: 5, reference: 0, rate: 1, playing: false))
        let advanced = pair.advance(to: GroupTimeline(seq: 2, position: 5, reference: 10, rate: 1, playing: true), at: 9)
        #expect(advanced)
        #expect(pair.expected(at: 9.5).position == 5)
        #expect(pair.expected(at: 9.5).playing == false)
        #expect(pair.expected(at: 12).position == 7)
        #expect(pair.expected(at: 12).playing)
        // Out-of-order (older) timelines are ignored.
        let stale = pair.advance(to: GroupTimeline(seq: 1, position: 99, reference: 0, rate: 1, playing: false), at: 12)
        #expect(!stale)
        #expect(pair.current.seq == 2)
    }
}

@Suite("Drift controller")
struct DriftControllerTests {
    @Test("no error plays at the group rate")
    func zero() {
        var controller = DriftController()
        let decision1 = controller.update(error: 0, expected: 10, rate: 1.25, now: 0)
        #expect(decision1 == .speed(1.25))
    }

    @Test("a small error nudges speed against it, proportionally and quantised")
    func nudges() {
        var controller = DriftController()
        // 5 ms ahead, 0.5 s time constant → 1 % slower.
        let decision2 = controller.update(error: 0.005, expected: 10, rate: 1, now: 0)
        #expect(decision2 == .speed(0.99))
        // At twice the rate the same error needs half the relative change: it decays in 0.5 s either way.
        let decision3 = controller.update(error: -0.002, expected: 10, rate: 2, now: 0.05)
        #expect(decision3 == .speed(2 * 1.002))
        // Below half a speed step, nothing to do.
        let decision4 = controller.update(error: 0.0002, expected: 10, rate: 1, now: 0.1)
        #expect(decision4 == .speed(1))
        // Clamped to ±5 % near the group, ±10 % beyond 20 ms.
        let decision5 = controller.update(error: -0.019, expected: 10, rate: 1, now: 0.15)
        #expect(decision5 == .speed(1.038))
        let decision6 = controller.update(error: -0.2, expected: 10, rate: 1, now: 0.2)
        #expect(decision6 == .speed(1.1))
    }

    @Test("for a second after a start, errors decay with the start's shorter time constant, once the output's delay allows it")
    func startCorrection() {
        var controller = DriftController()
        controller.started(at: 100)
        // The output's delay unknown: the steady 0.5 s constant (2 ms behind → 0.4 % faster).
        #expect(controller.update(error: -0.002, expected: 10, rate: 1, now: 100.05) == .speed(1.004))
        // A short delay (a sound device's 30 ms): 0.2 s → 1 % faster, for the first second.
        controller.outputDelayMeasured(0.03)
        #expect(controller.update(error: -0.002, expected: 10, rate: 1, now: 100.1) == .speed(1.01))
        #expect(controller.update(error: -0.002, expected: 10, rate: 1, now: 100.99) == .speed(1.01))
        // The window has passed: back to the steady constant.
        #expect(controller.update(error: -0.002, expected: 10, rate: 1, now: 101.0) == .speed(1.004))

        // 150 ms of delay: twice it, 0.3 s (0.67 %, in steps of 0.1 %).
        var buffered = DriftController()
        buffered.outputDelayMeasured(0.15)
        buffered.started(at: 0)
        #expect(buffered.update(error: -0.002, expected: 10, rate: 1, now: 0.1) == .speed(1.007))
        // A 300 ms delay: never slower than the steady constant; noise and one odd measure do
        // not move the median.
        var slow = DriftController()
        for delay in [0.3, 0.3, 0.31, -1, .nan, 5, 0.29, 0.01] { slow.outputDelayMeasured(delay) }
        #expect(slow.outputDelay == 0.3)
        slow.started(at: 0)
        #expect(slow.update(error: -0.002, expected: 10, rate: 1, now: 0.1) == .speed(1.004))
    }

    @Test("errors inside the deadband are left alone")
    func deadband() {
        var controller = DriftController(configuration: .init(deadband: 0.001))
        let inside = controller.update(error: 0.0009, expected: 10, rate: 1, now: 0)
        #expect(inside == .speed(1))
        let outside = controller.update(error: 0.002, expected: 10, rate: 1, now: 0.05)
        #expect(outside == .speed(0.996))
    }

    @Test("a large error seeks ahead by the seek lead, then waits out the cooldown")
    func seeks() {
        var controller = DriftController()
        let decision6 = controller.update(error: -2, expected: 50, rate: 1, now: 0)
        #expect(decision6 == .seek(50.03))
        #expect(controller.seeks == 1)
        let decision7 = controller.update(error: -2, expected: 50.1, rate: 1, now: 0.5)
        #expect(decision7 == .speed(1.1))
        let decision8 = controller.update(error: -2, expected: 51, rate: 1, now: 1.0)
        #expect(decision8 == .seek(51.03))
    }
}

@Suite("Frame event clock")
struct FrameEventClockTests {
    /// Frames every 40 ms, each noticed after a latency of 0.1 ms plus up to ±1 ms of wobble, and
    /// now and then (every `lateEvery`th frame) 8 ms late.
    func feed(_ clock: inout FrameEventClock, phase: Double, rate: Double, frames: Range<Int>, lateEvery: Int = 7, seed: UInt64 = 1) {
        var rng = SeededRandom(seed: seed)
        for index in frames {
            let position = Double(index) * 0.04
            var at = phase + position / rate + 0.0001 + rng.uniform(-0.001, 0.001)
            if index % lateEvery == 0 { at += 0.008 }
            clock.shown(position: position, at: at, rate: rate)
        }
    }

    @Test("the phase lands within a millisecond despite late notices", arguments: [1.0, 1.5, 0.75])
    func phase(rate: Double) throws {
        var clock = FrameEventClock()
        feed(&clock, phase: 3.2571, rate: rate, frames: 100..<150)
        let estimate = try #require(clock.phase)
        #expect(abs(estimate - 3.2571) < 0.001)
        let position = try #require(clock.position(at: 9))
        #expect(abs(position - (9 - 3.2571) * rate) < 0.001 * rate)
    }

    @Test("stays continuous across a speed change")
    func speedChange() throws {
        var clock = FrameEventClock()
        feed(&clock, phase: 0, rate: 1, frames: 1..<30)
        let before = try #require(clock.position(at: 1.2))
        clock.shown(position: 1.2, at: 1.2, rate: 1.02)
        let after = try #require(clock.position(at: 1.2))
        #expect(abs(after - before) < 1e-9)
        #expect(abs((try #require(clock.position(at: 2.2))) - (before + 1.02)) < 1e-9)
    }

    @Test("a jump backwards (a seek) forgets the old frames")
    func seekResets() throws {
        var clock = FrameEventClock()
        feed(&clock, phase: 0, rate: 1, frames: 50..<60)
        clock.shown(position: 0.4, at: 10, rate: 1)
        #expect(abs((try #require(clock.phase)) - 9.6) < 1e-9)
    }

    @Test("tells when the next frame is due, at any speed, after missed notices too", arguments: [1.0, 1.25])
    func nextFrame(rate: Double) throws {
        var clock = FrameEventClock()
        #expect(clock.nextFrame(after: 0) == nil)
        feed(&clock, phase: 3.2571, rate: rate, frames: 100..<150)
        #expect(abs(try #require(clock.framePeriod) - 0.04) < 1e-9)
        // The last frame fed is 149 (5.96 s of media): frame 150 is next.
        let lastShown = 3.2571 + 5.96 / rate
        let next = try #require(clock.nextFrame(after: lastShown + 0.001))
        #expect(abs(next - (3.2571 + 6.0 / rate)) < 0.001)
        // Asked later, without new notices (a busy event thread): the frame after that instant.
        let later = try #require(clock.nextFrame(after: lastShown + 0.1))
        #expect(later > lastShown + 0.1 && later - (lastShown + 0.1) <= 0.04 / rate + 1e-9)
        #expect(abs((later - 3.2571) * rate / 0.04 - ((later - 3.2571) * rate / 0.04).rounded()) < 0.03)
        clock.reset()
        #expect(clock.nextFrame(after: lastShown) == nil)
    }

    @Test("nothing is known before the first frame, nor after a reset")
    func empty() {
        var clock = FrameEventClock()
        #expect(clock.position(at: 1) == nil)
        clock.shown(position: 1, at: 2, rate: 1)
        clock.reset()
        #expect(clock.phase == nil)
    }
}

/// A player that follows orders like mpv: positions advance at `speed` while playing, unpausing
/// takes `startLatency`, seeks land after `seekLatency` on the frame grid.
struct SimulatedPlayer {
    var position: Double = 0
    var paused = true
    var speed = 1.0
    var startLatency = 0.01
    var seekLatency = 0.02
    var naturalRateError = 0.0  // e.g. 50e-6: this player's clock runs fast
    private var resumeAt: Double?
    private var seekLandsAt: (Double, Double)?
    private var lastTime: Double = 0

    mutating func advance(to t: Double) {
        let dt = t - lastTime
        lastTime = t
        if let (at, target) = seekLandsAt, t >= at {
            position = (target / 0.04).rounded(.up) * 0.04
            seekLandsAt = nil
            return
        }
        if seekLandsAt != nil { return }
        if !paused, let resumeAt {
            if t >= resumeAt {
                position += max(0, min(dt, t - resumeAt)) * speed * (1 + naturalRateError)
            }
        }
    }

    mutating func apply(_ command: RoomCoordinator.PlayerCommand, at t: Double) {
        switch command {
        case .setPaused(let p):
            if paused && !p { resumeAt = t + startLatency }
            paused = p
        case .setSpeed(let s): speed = s
        case .seek(let target): seekLandsAt = (t + seekLatency, target)
        }
    }

    func sample(at t: Double) -> RoomCoordinator.PlayerSample {
        .init(position: position, at: t, paused: paused, speed: speed, seeking: seekLandsAt != nil)
    }
}

@Suite("Room coordinator with a simulated player and network")
struct RoomCoordinatorTests {
    static let offset = 1000.0  // reference = local + offset
    static let oneWay = 0.005

    /// Runs the coordinator against the simulated player for `seconds`, answering clock probes.
    /// Returns the local time of the last step.
    @discardableResult
    func run(
        _ coordinator: inout RoomCoordinator, _ player: inout SimulatedPlayer, from start: Double, seconds: Double,
        sent: inout [ClientMessage]
    ) -> Double {
        var t = start
        var last = start
        while t < start + seconds - 1e-9 {
            last = t
            player.advance(to: t)
            for action in coordinator.tick(now: t, sample: player.sample(at: t)) {
                switch action {
                case .send(.timeRequest(let id, let t1)):
                    let serverTime = t1 + Self.offset + Self.oneWay
                    _ = coordinator.received(.timeReply(id: id, t1: t1, t2: serverTime, t3: serverTime), now: t + 2 * Self.oneWay)
                case .send(let message): sent.append(message)
                case .player(let command): player.apply(command, at: t)
                default: break
                }
            }
            t += 0.01
        }
        return last
    }

    func joined(timeline: GroupTimeline, at now: Double) -> RoomCoordinator {
        var coordinator = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "/films/night.mkv"))
        _ = coordinator.connected(now: now)
        _ = coordinator.received(.welcome(.init(name: "alice", room: "r", timeline: timeline, participants: [], activity: Activity(url: "/films/night.mkv"))), now: now)
        return coordinator
    }

    @Test("our own pause waits for the room's order on a quick link, and pauses at once on a slow one")
    func pauseWithRoom() {
        let timeline = GroupTimeline(seq: 1, position: 0, reference: Self.offset, rate: 1, playing: true)
        var coordinator = joined(timeline: timeline, at: 0)
        // No clock estimate yet: nothing says the order comes back soon.
        #expect(!coordinator.pausesWithRoom(atLocal: 0))
        for (index, roundTrip) in [0.001, 0.2].enumerated() {
            coordinator = joined(timeline: timeline, at: Double(index) * 100)
            var t = Double(index) * 100
            for _ in 0..<12 {
                for case .send(.timeRequest(let id, let t1)) in coordinator.tick(now: t, sample: nil) {
                    let server = t1 + Self.offset + roundTrip / 2
                    _ = coordinator.received(.timeReply(id: id, t1: t1, t2: server, t3: server), now: t1 + roundTrip)
                }
                t += 1
            }
            #expect(coordinator.pausesWithRoom(atLocal: t) == (roundTrip <= RoomCoordinator.pauseWithRoomWithin), "round trip \(roundTrip)")
        }
    }

    @Test("a late joiner locks onto a playing timeline within a millisecond", arguments: [0.0, 80e-6])
    func lateJoin(rateError: Double) {
        let timeline = GroupTimeline(seq: 7, position: 30, reference: Self.offset - 5, rate: 1, playing: true)
        var coordinator = joined(timeline: timeline, at: 0)
        var player = SimulatedPlayer()
        player.naturalRateError = rateError
        var sent: [ClientMessage] = []
        let end = run(&coordinator, &player, from: 0, seconds: 4, sent: &sent)
        // The truth: the timeline played from 30 at reference offset − 5, i.e. local −5.
        let expected = 30 + (end + 5)
        #expect(!player.paused)
        #expect(abs(player.position - expected) < 0.002, "position \(player.position) expected \(expected)")
        #expect(abs(coordinator.lastError ?? 1) < 0.001)
        #expect(coordinator.drift.seeks == 1)
    }

    @Test("attempts after a lost link keep saying where the group was, though the clock estimate is gone (redirects)")
    func resumeAcrossAttempts() {
        let timeline = GroupTimeline(seq: 3, position: 30, reference: Self.offset, rate: 1, playing: true)
        var coordinator = joined(timeline: timeline, at: 0)
        var player = SimulatedPlayer()
        var sent: [ClientMessage] = []
        run(&coordinator, &player, from: 0, seconds: 2, sent: &sent)
        func resume(_ actions: [RoomCoordinator.Action]) -> ClientMessage.Hello.Resume? {
            for case .send(.hello(let hello)) in actions { return hello.resume }
            return nil
        }
        // The link drops at local 2; the first attempt knows the group's position from the clock.
        let first = resume(coordinator.connected(now: 2))
        #expect(first.map { abs($0.position - 32) < 0.01 && $0.playing } == true, "\(String(describing: first))")
        // Redirected, then refused: later attempts carry it on, 3 s further along.
        _ = coordinator.connected(now: 4)
        let third = resume(coordinator.connected(now: 5))
        #expect(third.map { abs($0.position - 35) < 0.01 && $0.playing && $0.rate == 1 } == true, "\(String(describing: third))")
        // A new session (reset) has nothing to resume.
        coordinator.reset()
        #expect(resume(coordinator.connected(now: 6)) == nil)
    }

    @Test("between a reconnect's hello and its welcome only probes go out; status and media changed meanwhile follow the welcome")
    func nothingBeforeTheWelcome() {
        let timeline = GroupTimeline(seq: 3, position: 30, reference: Self.offset, rate: 1, playing: true)
        var coordinator = joined(timeline: timeline, at: 0)
        var player = SimulatedPlayer()
        var sent: [ClientMessage] = []
        run(&coordinator, &player, from: 0, seconds: 2, sent: &sent)
        #expect(sent.contains { if case .report = $0 { true } else { false } }, "a joined player reports")
        // The link drops; the new one's hello is out, its time replies come back (the server
        // answers probes at once), and the handshake (say, a slow key derivation) takes 3 s.
        _ = coordinator.connected(now: 2)
        sent = []
        run(&coordinator, &player, from: 2, seconds: 3, sent: &sent)
        var during = sent
        during += coordinator.setStatus(.init(ready: true, waitForMe: false)).compactMap { if case .send(let m) = $0 { m } else { nil } }
        during += coordinator.mediaLoaded(MediaInfo(duration: 75)).compactMap { if case .send(let m) = $0 { m } else { nil } }
        #expect(during.isEmpty, "sent before the welcome: \(during)")
        let refused = coordinator.request(.play, position: 33, now: 5)
        #expect(refused.actions.contains { if case .actionRefused(_, let error) = $0 { error.code == .notInRoom } else { false } }, "\(refused.actions)")
        let welcome = coordinator.received(
            .welcome(.init(name: "alice", room: "r", timeline: timeline, participants: [], activity: Activity(url: "/films/night.mkv"))), now: 5)
        let after = welcome.compactMap { if case .send(let m) = $0 { m } else { nil } }
        #expect(after.contains(.status(.init(ready: true, waitForMe: false))), "\(after)")
        #expect(after.contains { if case .media = $0 { true } else { false } }, "\(after)")
        sent = []
        run(&coordinator, &player, from: 5, seconds: 2, sent: &sent)
        #expect(sent.contains { if case .report = $0 { true } else { false } }, "reports again once welcomed")
    }

    @Test("a paused group reports no drift (a paused player shows a whole frame, not drift)")
    func noDriftWhilePaused() {
        let timeline = GroupTimeline(seq: 3, position: 4.021, reference: Self.offset - 5, rate: 1, playing: false)
        var coordinator = joined(timeline: timeline, at: 0)
        var player = SimulatedPlayer()
        player.position = 4.0  // the frame before the group's instant
        var sent: [ClientMessage] = []
        _ = run(&coordinator, &player, from: 0, seconds: 2, sent: &sent)
        #expect(coordinator.lastError == nil)
        let reports = sent.compactMap { message -> Double?? in
            if case .report(let drift, _) = message { return drift } else { return nil }
        }
        #expect(!reports.isEmpty)
        #expect(reports.allSatisfy { $0 == nil })
    }

    @Test("over a jittery, lossy network the player still locks within the clock's uncertainty", arguments: [1, 2, 3] as [UInt64])
    func jitteryLossyNetwork(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let timeline = GroupTimeline(seq: 2, position: 10, reference: Self.offset - 1, rate: 1, playing: true)
        var coordinator = joined(timeline: timeline, at: 0)
        var player = SimulatedPlayer()
        var t = 0.0
        while t < 6 {
            player.advance(to: t)
            for action in coordinator.tick(now: t, sample: player.sample(at: t)) {
                switch action {
                case .send(.timeRequest(let id, let t1)):
                    guard random.unit() > 0.2 else { continue }  // 20 % of exchanges are lost
                    let up = 0.05 + random.uniform(-0.02, 0.02)
                    let down = 0.05 + random.uniform(-0.02, 0.02)
                    let serverTime = t1 + up + Self.offset
                    _ = coordinator.received(.timeReply(id: id, t1: t1, t2: serverTime, t3: serverTime), now: t1 + up + down)
                case .player(let command): player.apply(command, at: t)
                default: break
                }
            }
            t += 0.01
        }
        let estimate = try #require(coordinator.estimator.estimate(atLocal: t))
        let truth = 10 + (t - 0.01 + 1)  // played from 10 at local −1
        #expect(abs(player.position - truth) <= estimate.uncertainty + 0.002, "off by \(player.position - truth), uncertainty \(estimate.uncertainty)")
        #expect(estimate.uncertainty < 0.04)
    }

    @Test("a paused timeline pauses and snaps to the pauser's frame, once")
    func pauseSnaps() {
        var coordinator = joined(timeline: GroupTimeline(seq: 1, position: 12.34, reference: Self.offset, rate: 1, playing: false), at: 0)
        var player = SimulatedPlayer()
        player.position = 3
        var sent: [ClientMessage] = []
        run(&coordinator, &player, from: 0, seconds: 1, sent: &sent)
        #expect(player.paused)
        #expect(abs(player.position - 12.36) < 1e-9)  // the frame containing 12.34 on a 40 ms grid
    }

    @Test("a paused player that moves off its frame after settling is snapped back; one on a frame grid is left alone")
    func pauseResnaps() {
        var coordinator = joined(timeline: GroupTimeline(seq: 1, position: 12.34, reference: Self.offset, rate: 1, playing: false), at: 0)
        var player = SimulatedPlayer()
        player.position = 3
        var sent: [ClientMessage] = []
        var seeks = 0
        func step(_ t: Double) {
            player.advance(to: t)
            for action in coordinator.tick(now: t, sample: player.sample(at: t)) {
                if case .player(let command) = action {
                    if case .seek = command { seeks += 1 }
                    player.apply(command, at: t)
                }
                if case .send(let message) = action { sent.append(message) }
            }
        }
        run(&coordinator, &player, from: 0, seconds: 1, sent: &sent)
        #expect(abs(player.position - 12.36) < 1e-9)  // settled on the frame next to 12.34
        for t in stride(from: 1.0, to: 2.0, by: 0.05) { step(t) }
        #expect(seeks == 0, "a player settled on the grid is not seeked again")
        // A frame shown late under load: the player moves one frame on while paused.
        player.position += 0.04
        for t in stride(from: 2.0, to: 3.0, by: 0.05) { step(t) }
        #expect(seeks == 1)
        #expect(abs(player.position - 12.36) < 1e-9)
    }

    @Test("after a seek while playing, the held participant reports ready exactly once")
    func readyAfterHold() {
        var coordinator = joined(timeline: GroupTimeline(seq: 3, position: 40, reference: Self.offset, rate: 1, playing: false, holding: true), at: 0)
        var player = SimulatedPlayer()
        var sent: [ClientMessage] = []
        run(&coordinator, &player, from: 0, seconds: 1, sent: &sent)
        #expect(sent.filter { $0 == .ready(seq: 3) }.count == 1)
    }

    @Test("a scheduled play starts at its instant, not before")
    func scheduledPlay() {
        var coordinator = joined(timeline: GroupTimeline(seq: 1, position: 10, reference: Self.offset, rate: 1, playing: false), at: 0)
        var player = SimulatedPlayer()
        player.position = 10
        var sent: [ClientMessage] = []
        run(&coordinator, &player, from: 0, seconds: 0.5, sent: &sent)
        _ = coordinator.received(
            .applied(timeline: GroupTimeline(seq: 2, position: 10, reference: Self.offset + 1.0, rate: 1, playing: true),
                notice: Notice(actor: "bob", action: .play, position: 10), actionID: 1), now: 0.5)
        run(&coordinator, &player, from: 0.5, seconds: 0.45, sent: &sent)
        #expect(player.paused)
        #expect(player.position == 10)
        let end = run(&coordinator, &player, from: 0.95, seconds: 2, sent: &sent)
        #expect(!player.paused)
        #expect(abs(player.position - (10 + end - 1.0)) < 0.002)
    }

    @Test("our own action suppresses reconciling until the server applies it, and is reported")
    func ownAction() {
        var coordinator = joined(timeline: GroupTimeline(seq: 1, position: 0, reference: Self.offset, rate: 1, playing: true), at: 0)
        let (id, actions) = coordinator.request(.pause, position: 5, now: 1)
        #expect(actions == [.send(.action(.init(id: id, kind: .pause, position: 5)))])
        #expect(coordinator.hasPendingAction(now: 1.5))
        let result = coordinator.received(
            .applied(timeline: GroupTimeline(seq: 2, position: 5, reference: Self.offset + 1, rate: 1, playing: false),
                notice: Notice(actor: "alice", action: .pause, position: 5), actionID: id), now: 1.6)
        #expect(result.contains(.actionApplied(id: id)))
        #expect(result.contains(.notice(Notice(actor: "alice", action: .pause, position: 5))))
        #expect(!coordinator.hasPendingAction(now: 1.6))
    }

    @Test("a server error ends the session with its code")
    func failure() {
        var coordinator = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "film.mkv"))
        let actions = coordinator.received(.error(code: "name-taken", message: "taken"), now: 0)
        #expect(actions == [.failed(CowatchError(.nameTaken, "taken"))])
    }
}
