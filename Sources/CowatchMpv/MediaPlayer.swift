/// What the daemon needs of a player: properties, commands and the event stream.
///
/// `MpvPlayer` is the real one; the daemon's logic is written against this protocol so unit
/// tests can run it against a simulated player (`CowatchTestSupport.SimulatedPlayer`).
///
/// Threading: every method may be called from any thread (libmpv's are thread-safe), except
/// that `events` has one consumer. Errors are `MpvError`s, as libmpv reports them.
public protocol MediaPlayer: AnyObject, Sendable {
    /// The player's events, in order; finishes after `shutdown`.
    var events: AsyncStream<MpvEvent> { get }
    /// The name `script-message-to` reaches this client by: a message sent so comes back as a
    /// `clientMessage` event behind every event mpv queued before it (a fence).
    var clientName: String { get }
    func command(_ arguments: [String]) throws(MpvError)
    func commandReturning(_ arguments: [String]) throws(MpvError) -> MpvNode
    func setString(_ name: String, _ value: String) throws(MpvError)
    func setDouble(_ name: String, _ value: Double) throws(MpvError)
    func setFlag(_ name: String, _ value: Bool) throws(MpvError)
    func getDouble(_ name: String) throws(MpvError) -> Double
    func getFlag(_ name: String) throws(MpvError) -> Bool
    func getString(_ name: String) throws(MpvError) -> String
    func getNode(_ name: String) throws(MpvError) -> MpvNode
    /// Reports changes of the property as `propertyChange` events.
    func observe(_ name: String) throws(MpvError)
    /// Quits the player and waits until it is gone.
    func shutdown() async
}

extension MpvPlayer: MediaPlayer {}
