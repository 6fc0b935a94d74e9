/// The server's side of Syncplay's latency reckoning, kept for one client as Syncplay's server
/// keeps it (`protocols.py` `PingService`): each `State` answer echoes the server's stamp, so the
/// round trip is `now − echoed stamp`; a moving average (weight 0.85 on the old value, the first
/// taken whole); and the client's forward delay, half the average, plus the excess of this round
/// trip over the `clientRtt` the client reported when that is the smaller. The delay is added to
/// the client's playing positions; the round trip goes back to it as `serverRtt` (Cowatch's own
/// Syncplay client mirrors both, `SyncplayDelayMirror`, so they must be the server's measures,
/// never the client's own numbers echoed).
///
/// Threading: a value type; one owner. Pure: stamps and times in, seconds out. A stamp or a
/// round trip a client could not have measured (negative, not finite, a minute or more) is not
/// taken.
public struct SyncplayServerPing: Sendable, Equatable {
    /// Syncplay's `PING_MOVING_AVERAGE_WEIGHT`.
    public static let averageWeight = 0.85
    /// Round trips from this long on are not believed (seconds).
    public static let maximumRoundTrip = 60.0

    /// The last round trip measured (0: none yet): what the next `State` says as `serverRtt`.
    public private(set) var roundTrip: Double = 0
    /// The moving average of the round trips.
    public private(set) var average: Double = 0
    /// How late the client's positions reach the server (seconds), added to a playing one.
    public private(set) var forwardDelay: Double = 0

    public init() {}

    /// The client's answer echoed our stamp `echoed` (its `latencyCalculation`) at `now`, on the
    /// same clock, and reported `clientRtt`.
    public mutating func received(echoed: Double?, clientRtt: Double?, now: Double) {
        guard let echoed, echoed.isFinite, now.isFinite else { return }
        let rtt = now - echoed
        let reported = clientRtt ?? 0
        guard rtt >= 0, rtt < Self.maximumRoundTrip, reported.isFinite, reported >= 0 else { return }
        roundTrip = rtt
        average = Self.average(average, rtt)
        forwardDelay = Self.forwardDelay(average: average, rtt: rtt, clientRtt: reported)
    }

    // MARK: Syncplay's arithmetic (also what `SyncplayDelayMirror` reproduces of the server)

    /// `avg·0.85 + rtt·0.15`, the first round trip taken whole.
    static func average(_ average: Double, _ rtt: Double) -> Double {
        average == 0 ? rtt : average * averageWeight + rtt * (1 - averageWeight)
    }

    /// `avg/2`, plus the excess of the server's round trip over the one the client reported.
    static func forwardDelay(average: Double, rtt: Double, clientRtt: Double) -> Double {
        average / 2 + max(0, rtt - clientRtt)
    }
}
