import CowatchClient
import CowatchCore
import Foundation

/// Notes every change of one mpv property, and when it arrived, on a connection of its own to a
/// player's mpv IPC socket (`observe_property`): the observer uses it to see each speed change a
/// daemon makes, without adding a read to the frames it times.
///
/// The instant is when the change event was read, a little after mpv made it (its IPC thread's
/// latency, well under a frame here).
///
/// Threading: a background thread reads; `changes` may be called from any thread. `stop()` ends
/// the thread within `poll` seconds (also on deinit). Errors: `init` throws when the socket does
/// not answer; a connection lost later just ends the record.
public final class PropertyWatcher: Sendable {
    public let property: String
    private let record = Locked<[(at: Double, value: Double)]>([])
    private let running = Locked(true)

    public init(path: String, property: String, poll: Double = 0.1) throws {
        self.property = property
        let record = self.record
        let running = self.running
        // The client is made on the thread that uses it (it is not Sendable); `init` waits for
        // mpv's first event, the value when watching began, so no change is missed after it.
        let thread = Thread {
            guard let client = try? ControlClient(path: path),
                (try? client.request([.string("observe_property"), .number(1), .string(property)])) != nil
            else { return }
            while running.withLock({ $0 }) {
                // nil is a quiet `poll`; a lost connection throws and ends the record. No request of
                // ours while waiting: every read takes mpv's core lock, beside the frames being timed.
                let event: ControlEvent?
                do { event = try client.nextEvent(timeout: poll) } catch { break }
                guard let event else { continue }
                // A flag (`pause`) is recorded as 1 or 0.
                // mpv's events are not the daemon's: they arrive as `.unknown`.
                guard case .unknown(name: "property-change", let fields) = event, fields["name"]?.stringValue == property,
                    let value = fields["data"]?.numberValue ?? fields["data"]?.boolValue.map({ $0 ? 1.0 : 0.0 })
                else { continue }
                let at = monotonicNow()
                record.withLock { $0.append((at, value)) }
            }
            client.close()
        }
        thread.start()
        let deadline = monotonicNow() + 5
        while record.withLock({ $0.isEmpty }) {
            guard monotonicNow() < deadline else {
                stop()
                throw TestFailure("no \(property) from \(path) in 5 s")
            }
            usleep(2000)
        }
    }

    deinit { stop() }

    public func stop() { running.withLock { $0 = false } }

    /// Every change so far (the first entry is the value when watching began), oldest first.
    public var changes: [(at: Double, value: Double)] { record.withLock { $0 } }
}
