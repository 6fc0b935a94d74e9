import CowatchCore
import NIOCore

/// Where the two connections of a film stream meet on the server (issue 25): the receiver's,
/// which usually comes first and waits, and the sharer's serving connection, with the same
/// stream number. Either order works.
///
/// A leg that leaves before its partner came leaves a mark for `Limits.pairing` seconds, so a
/// partner that was already on its way is closed at once instead of waiting in vain.
///
/// Threading: any thread; state under a lock, never held across I/O.
final class StreamRendezvous: Sendable {
    private struct State {
        var waiting: [Int: StreamLink] = [:]
        /// Streams whose first leg left unpaired, and when.
        var abandoned: [Int: Double] = [:]
    }

    private let state = Locked(State())

    enum Joined {
        /// The first leg: its partner is not there yet.
        case waiting(StreamLeg)
        /// The second leg: both are there.
        case paired(StreamLeg)
        /// The first leg already left: nothing to relay.
        case partnerGone
    }

    /// Brings `channel`, a connection of stream `stream`, to the meeting.
    func join(_ stream: Int, channel: any Channel, now: Double, pairingLimit: Double) -> Joined {
        state.withLock { state in
            state.abandoned = state.abandoned.filter { now - $0.value < pairingLimit }
            if state.abandoned.removeValue(forKey: stream) != nil { return .partnerGone }
            if let link = state.waiting.removeValue(forKey: stream), link.pair(channel, now: now) {
                return .paired(StreamLeg(link: link, side: 1))
            }
            let link = StreamLink(stream: stream, first: channel, now: now)
            state.waiting[stream] = link
            return .waiting(StreamLeg(link: link, side: 0))
        }
    }

    /// `leg`'s connection is done: an unpaired leg gives up its place (its partner, if it comes,
    /// is closed); a paired one closes its partner.
    func leave(_ leg: StreamLeg, now: Double) {
        let unpaired = state.withLock { state -> Bool in
            guard leg.link.abandonIfUnpaired() else { return false }
            if state.waiting[leg.link.stream] === leg.link { state.waiting[leg.link.stream] = nil }
            state.abandoned[leg.link.stream] = now
            return true
        }
        if !unpaired { leg.link.closeBoth() }
    }

    /// Legs waiting now (for tests).
    var waitingCount: Int { state.withLock { $0.waiting.count } }
}

/// One side of a stream's link, as its connection's relay holds it.
struct StreamLeg: Sendable {
    let link: StreamLink
    /// 0: the leg that came first; 1: the second.
    let side: Int

    /// The partner's channel, once paired.
    func partner() -> (any Channel)? { link.channel(1 - side) }
}

/// The two connections of one stream and how recently bytes moved between them.
///
/// Threading: any thread; state under a lock, channels closed outside it.
final class StreamLink: Sendable {
    let stream: Int

    private struct State {
        var channels: [any Channel]
        var abandoned = false
        var closed = false
        var lastActivity: Double
        var watchdog: RepeatedTask?
    }

    private let state: Locked<State>

    init(stream: Int, first: any Channel, now: Double) {
        self.stream = stream
        state = Locked(State(channels: [first], lastActivity: now))
    }

    /// Adds the second leg; false when the first already gave up.
    func pair(_ channel: any Channel, now: Double) -> Bool {
        state.withLock { state in
            guard !state.abandoned, !state.closed, state.channels.count == 1 else { return false }
            state.channels.append(channel)
            state.lastActivity = now
            return true
        }
    }

    func channel(_ side: Int) -> (any Channel)? {
        state.withLock { $0.channels.indices.contains(side) ? $0.channels[side] : nil }
    }

    var isPaired: Bool { state.withLock { $0.channels.count == 2 } }

    /// Marks the link given up when it has one leg; returns whether it did.
    func abandonIfUnpaired() -> Bool {
        state.withLock { state in
            guard state.channels.count == 1 else { return false }
            state.abandoned = true
            return true
        }
    }

    /// Bytes moved one way or the other.
    func touch(now: Double) {
        state.withLock { $0.lastActivity = now }
    }

    /// Seconds since bytes last moved.
    func idle(now: Double) -> Double {
        state.withLock { now - $0.lastActivity }
    }

    /// Keeps `task` (the idle watchdog) to cancel it when the link closes.
    func watch(_ task: RepeatedTask) {
        let closed = state.withLock { state -> Bool in
            if !state.closed { state.watchdog = task }
            return state.closed
        }
        if closed { task.cancel() }
    }

    /// Closes both connections (once).
    func closeBoth() {
        let (channels, watchdog) = state.withLock { state -> ([any Channel], RepeatedTask?) in
            guard !state.closed else { return ([], nil) }
            state.closed = true
            defer { state.watchdog = nil }
            return (state.channels, state.watchdog)
        }
        watchdog?.cancel()
        for channel in channels { channel.close(promise: nil) }
    }
}
