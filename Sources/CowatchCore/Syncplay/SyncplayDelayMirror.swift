/// A Syncplay server's estimate of how late our messages reach it, mirrored from the round trips
/// it tells us, so that the playing positions we report land where our player truly is.
///
/// What the server does (`protocols.py` `PingService`, `server.py` `Watcher.updateState`): for
/// each of our `State` answers (its stamp echoed) it measures a round trip `rtt`, keeps a moving
/// average `avg = 0.85·avg + 0.15·rtt` (the first one taken whole), and takes our forward delay as
/// `fd = avg/2`, plus `rtt − clientRtt` when the `clientRtt` we reported is the smaller. It adds
/// `fd` to every playing position we report, and the room (its slowest member) follows that. A
/// slow first round trip (a daemon busy joining) lingers in the average for half a minute: a
/// daemon reporting its true position is placed `fd − true delay` ahead of it, and every other
/// daemon places the room's change there.
///
/// What this does: the server tells us the last round trip it measured (`serverRtt` in each
/// `State`), so its average is known here exactly, one round trip late. Which of our answers a
/// `State` tells of: those the server had received before it stamped the `State` (an answer that
/// echoed stamp `s`, measured at `rtt`, reached it at `s + rtt` on its clock), each counted once,
/// as the server counted it. The round trip it is about to measure for the answer we send now is
/// predicted: our own round trip measured from this very `State`'s echo (it shares this
/// `State`'s way to us and the time we took to read it) plus the median of the server's recent
/// measures over ours; it weighs 0.15/2, so 1 ms of error moves the position by 0.075 ms. Our
/// first answer, before we measured any round trip, echoes nothing (the shell's `answer` leaves
/// the stamp out): the server measures nothing and adds nothing until it can be predicted. The `clientRtt` we report is a bound
/// the server's measure does not reach (at least our own round trip, twice the largest of its
/// recent ones, and `minimumClientRtt`), so the excess term, which would count whole and cannot be
/// predicted, stays 0. A playing position is reported as `position + oneWay − fd`, `oneWay` being
/// half our smallest recent round trip: the server then holds the position our player had when
/// the message reached it, on the same reckoning (half of each direction's floor) by which every
/// Cowatch daemon places the server's stamps on its own clock (`SyncplayClient.serverClock`).
///
/// Threading: a value type; one owner. Pure: numbers in, numbers out.
public struct SyncplayDelayMirror: Sendable, Equatable {
    /// Round trips (each side's) remembered for the prediction, the bound and the floor.
    static let window = 8
    /// The least `clientRtt` reported (seconds): a server measure of us beyond it is a stall.
    public static let minimumClientRtt = 0.25
    /// No correction larger than this (seconds): a server whose numbers say more is not believed.
    static let maximumCorrection = 5.0

    /// The server's average round trip of us, as it holds it (0: it measured none yet).
    public private(set) var averageRoundTrip: Double = 0
    /// The forward delay the server holds for us now (from its last measure; predicted until it
    /// tells us that measure).
    public private(set) var forwardDelay: Double = 0
    /// The server's recent measures of us, newest last.
    private var serverRoundTrips: [Double] = []
    /// Our own recent round trips (the server's holding time taken out), newest last.
    private var ownRoundTrips: [Double] = []
    /// Our answers the server has not told us the measure of yet: the server stamp each echoed,
    /// and the `clientRtt` it said.
    private var unmeasured: [Answer] = []

    /// The server's measures less our own round trips of the same `State`s, newest last.
    private var serverOverOwn: [Double] = []

    struct Answer: Sendable, Equatable {
        var stamp: Double
        var clientRtt: Double
        /// Our own round trip measured from the `State` it answered, if that one echoed our stamp.
        var ownRoundTrip: Double?
    }

    public init() {}

    /// A server `State` stamped `stamp` said `serverRtt`, its last measure of us: each of our
    /// answers it had received by then is taken into the average exactly as the server took it
    /// (with that measure; the server says only its last one).
    public mutating func serverSaid(serverRtt: Double?, stamp: Double?) {
        guard let rtt = serverRtt, rtt.isFinite, rtt > 0, rtt < 3600, let stamp, stamp.isFinite else { return }
        // Answers go out in the order of the stamps they echo; 1 µs for the rounding of the sum.
        let measured = unmeasured.prefix { $0.stamp + rtt <= stamp + 1e-6 }
        guard !measured.isEmpty else { return }
        for answer in measured {
            averageRoundTrip = SyncplayServerPing.average(averageRoundTrip, rtt)
            forwardDelay = SyncplayServerPing.forwardDelay(average: averageRoundTrip, rtt: rtt, clientRtt: answer.clientRtt)
        }
        // The measure is of the last of them: what it took beyond our own round trip then.
        if let own = measured.last?.ownRoundTrip { Self.remember(rtt - own, in: &serverOverOwn) }
        unmeasured.removeFirst(measured.count)
        Self.remember(rtt, in: &serverRoundTrips)
    }

    /// Our own round trip, measured from the server's echo of our stamp.
    public mutating func measuredOwn(roundTrip: Double) {
        guard roundTrip.isFinite, roundTrip >= 0, roundTrip < 3600 else { return }
        Self.remember(roundTrip, in: &ownRoundTrips)
    }

    /// True once we measured a round trip of our own: from then on our answers echo the server's
    /// stamp (before, the server's measure could not be predicted).
    public var hasOwnRoundTrip: Bool { !ownRoundTrips.isEmpty }

    /// What to report as `clientRtt`: a bound the server's measure of us does not reach.
    public var clientRtt: Double {
        max(ownRoundTrips.last ?? 0, 2 * (serverRoundTrips.max() ?? 0), Self.minimumClientRtt)
    }

    /// We answer the server's `State` stamped `stamp` now (the stamp echoed, `clientRtt`
    /// reported; `ownRoundTrip`, ours measured from that `State`'s echo, if it had one): the server
    /// will measure this answer's round trip, then add the forward delay it makes to the position
    /// the answer carries. Returns that delay (predicted, after those of our answers still
    /// unmeasured), which the server then holds until our next answer.
    public mutating func answering(stamp: Double, clientRtt: Double, ownRoundTrip: Double? = nil) -> Double {
        unmeasured.append(Answer(stamp: stamp, clientRtt: clientRtt, ownRoundTrip: ownRoundTrip))
        if unmeasured.count > Self.window * 2 { unmeasured.removeFirst(unmeasured.count - Self.window * 2) }
        let rtt = ownRoundTrip.map { $0 + (Self.median(serverOverOwn) ?? 0) }
            ?? Self.median(serverRoundTrips) ?? ownRoundTrips.last ?? 0
        var average = averageRoundTrip
        for answer in unmeasured {
            average = SyncplayServerPing.average(average, rtt)
            forwardDelay = SyncplayServerPing.forwardDelay(average: average, rtt: rtt, clientRtt: answer.clientRtt)
        }
        return forwardDelay
    }

    /// Our one-way delay to the server: half our smallest recent round trip.
    public var oneWay: Double { (ownRoundTrips.min() ?? 0) / 2 }

    /// The position to report for a player at `position`, given the forward delay the server will
    /// add (`forwardDelay`, or what `answering` returned): a paused one as it is (the server adds
    /// nothing to it), a playing one moved by `oneWay − delay`. That is below 0 for a play from
    /// the start (the server adds its estimate back: clamped, the room would start `delay` ahead).
    public func reported(_ position: Double, paused: Bool, delay: Double) -> Double {
        guard !paused else { return position }
        return position + min(max(oneWay - delay, -Self.maximumCorrection), Self.maximumCorrection)
    }

    private static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    private static func remember(_ value: Double, in list: inout [Double]) {
        list.append(value)
        if list.count > Self.window { list.removeFirst(list.count - Self.window) }
    }
}
