import CMpv
import Foundation
import Logging
import CowatchCore

/// One embedded libmpv player.
///
/// Creating it sets `LC_NUMERIC` to "C" (libmpv refuses to start otherwise), applies the options
/// (the same names as mpv's command line, without `--`), initialises the player and starts a
/// dedicated event thread. Events arrive on `events`, converted to Swift values.
///
/// Threading: every method may be called from any thread or task (libmpv's client API is
/// thread-safe, and a property read costs about 10 µs). `events` has a single consumer.
/// Errors: calls throw `MpvError` with mpv's code. After `shutdown()` returns, every call throws.
///
/// Teardown follows mpv's rules: `quit`, wait for `MPV_EVENT_SHUTDOWN` on the event thread, then
/// `mpv_terminate_destroy`. Always call `shutdown()` before dropping the player.
public final class MpvPlayer: Sendable {
    /// The events, in mpv's order. Finishes after `.shutdown`.
    public let events: AsyncStream<MpvEvent>

    private let handle: MpvHandle
    private let eventThreadEnded = Latch()
    private let destroyed = Locked(false)
    private let logger: Logger

    /// Creates and initialises a player.
    ///
    /// - Parameter options: `(name, value)` pairs set with `mpv_set_option_string` before
    ///   `mpv_initialize`, in order (a later one wins).
    /// - Throws: `MpvError` when libmpv cannot be created (code `MPV_ERROR_GENERIC`), an option is
    ///   rejected (the operation names it) or initialisation fails.
    public init(options: [(String, String)], logger: Logger = Logger(label: "cowatch.mpv")) throws(MpvError) {
        setlocale(LC_NUMERIC, "C")
        guard let raw = mpv_create() else {
            throw MpvError(code: MPV_ERROR_GENERIC.rawValue, operation: "mpv_create")
        }
        for (name, value) in options {
            let status = mpv_set_option_string(raw, name, value)
            if status < 0 {
                mpv_terminate_destroy(raw)
                throw MpvError(code: status, operation: "option \(name)=\(value)")
            }
        }
        let status = mpv_initialize(raw)
        if status < 0 {
            mpv_terminate_destroy(raw)
            throw MpvError(code: status, operation: "mpv_initialize")
        }
        mpv_request_log_messages(raw, "warn")

        self.handle = MpvHandle(raw)
        self.logger = logger
        let (stream, continuation) = AsyncStream.makeStream(of: MpvEvent.self, bufferingPolicy: .unbounded)
        self.events = stream
        let thread = Thread { [handle, eventThreadEnded] in
            MpvEventPump.run(handle: handle, continuation: continuation)
            eventThreadEnded.open()
        }
        thread.name = "cowatch.mpv.events"
        thread.start()
    }

    /// Runs an mpv command (`mpv_command`), e.g. `["seek", "90", "absolute+exact"]`.
    /// Returns when mpv has accepted it; effects such as seeking complete later (watch `events`).
    public func command(_ arguments: [String]) throws(MpvError) {
        _ = try commandReturning(arguments)
    }

    /// Runs an mpv command and returns its result (`mpv_command_ret`); `.none` when it has none.
    public func commandReturning(_ arguments: [String]) throws(MpvError) -> MpvNode {
        let raw = try liveHandle()
        let cStrings = arguments.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = cStrings.map { UnsafePointer($0) }
        pointers.append(nil)
        var result = mpv_node()
        let status = pointers.withUnsafeMutableBufferPointer { mpv_command_ret(raw, $0.baseAddress, &result) }
        try MpvError.check(status, "command \(arguments.first ?? "")")
        defer { mpv_free_node_contents(&result) }
        return MpvNode(copying: result)
    }

    /// Sets a property from a string, as `mpv --name=value` would.
    public func setString(_ name: String, _ value: String) throws(MpvError) {
        try MpvError.check(mpv_set_property_string(try liveHandle(), name, value), "set_property \(name)")
    }

    /// Sets a numeric property.
    public func setDouble(_ name: String, _ value: Double) throws(MpvError) {
        var value = value
        try MpvError.check(mpv_set_property(try liveHandle(), name, MPV_FORMAT_DOUBLE, &value), "set_property \(name)")
    }

    /// Sets a yes/no property.
    public func setFlag(_ name: String, _ value: Bool) throws(MpvError) {
        var flag: Int32 = value ? 1 : 0
        try MpvError.check(mpv_set_property(try liveHandle(), name, MPV_FORMAT_FLAG, &flag), "set_property \(name)")
    }

    /// Reads a numeric property.
    public func getDouble(_ name: String) throws(MpvError) -> Double {
        var value = 0.0
        try MpvError.check(mpv_get_property(try liveHandle(), name, MPV_FORMAT_DOUBLE, &value), "get_property \(name)")
        return value
    }

    /// Reads a yes/no property.
    public func getFlag(_ name: String) throws(MpvError) -> Bool {
        var value: Int32 = 0
        try MpvError.check(mpv_get_property(try liveHandle(), name, MPV_FORMAT_FLAG, &value), "get_property \(name)")
        return value != 0
    }

    /// Reads a property as a string (`mpv_get_property_string`).
    public func getString(_ name: String) throws(MpvError) -> String {
        guard let cString = mpv_get_property_string(try liveHandle(), name) else {
            throw MpvError(code: MPV_ERROR_PROPERTY_UNAVAILABLE.rawValue, operation: "get_property \(name)")
        }
        defer { mpv_free(cString) }
        return String(cString: cString)
    }

    /// Reads any property in its natural type (`MPV_FORMAT_NODE`).
    public func getNode(_ name: String) throws(MpvError) -> MpvNode {
        var node = mpv_node()
        try MpvError.check(mpv_get_property(try liveHandle(), name, MPV_FORMAT_NODE, &node), "get_property \(name)")
        defer { mpv_free_node_contents(&node) }
        return MpvNode(copying: node)
    }

    /// This handle's client name (what `script-message-to` addresses), or "" once destroyed.
    /// Threading: any thread.
    public var clientName: String {
        guard let raw = try? liveHandle(), let name = mpv_client_name(raw) else { return "" }
        return String(cString: name)
    }

    /// Asks mpv to report changes of a property as `.propertyChange` events, in its natural type.
    public func observe(_ name: String) throws(MpvError) {
        try MpvError.check(mpv_observe_property(try liveHandle(), 0, name, MPV_FORMAT_NODE), "observe_property \(name)")
    }

    /// Quits the player and frees it. Safe to call more than once and after the user closed the
    /// window; returns once libmpv is destroyed.
    public func shutdown() async {
        let raw = handle.raw
        if !eventThreadEnded.isOpen {
            _ = "quit".withCString { quit in
                var args: [UnsafePointer<CChar>?] = [quit, nil]
                return args.withUnsafeMutableBufferPointer { mpv_command(raw, $0.baseAddress) }
            }
        }
        await eventThreadEnded.wait()
        let first = destroyed.withLock { destroyed in
            defer { destroyed = true }
            return !destroyed
        }
        if first {
            mpv_terminate_destroy(raw)
            logger.debug("mpv destroyed", metadata: ["cowatch.mpv": "teardown"])
        }
    }

    private func liveHandle() throws(MpvError) -> OpaquePointer {
        // After destruction the pointer dangles; refuse instead of crashing.
        if destroyed.withLock({ $0 }) {
            throw MpvError(code: MPV_ERROR_UNINITIALIZED.rawValue, operation: "player already shut down")
        }
        return handle.raw
    }
}

/// The raw `mpv_handle*`.
///
/// `@unchecked Sendable` because libmpv documents its client API as thread-safe; the two calls
/// that are not (`mpv_wait_event`, `mpv_terminate_destroy`) are confined: the first to the event
/// thread, the second to `shutdown()` after that thread has ended.
final class MpvHandle: @unchecked Sendable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
}
