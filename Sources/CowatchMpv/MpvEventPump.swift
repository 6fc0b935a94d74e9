import CMpv
import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// The body of the event thread: waits on `mpv_wait_event` and converts each event.
///
/// Lives at file scope outside any `main.swift` on purpose: code there is main-actor isolated,
/// and running it on mpv's side of the world traps.
enum MpvEventPump {
    static func run(handle: MpvHandle, continuation: AsyncStream<MpvEvent>.Continuation) {
        defer { continuation.finish() }
        while true {
            guard let event = mpv_wait_event(handle.raw, -1)?.pointee else { continue }
            if event.event_id == MPV_EVENT_NONE { continue }
            guard let converted = convert(event) else { continue }
            if case .endFile(_, .some, _) = converted {
                if yieldWithItsLog(converted, handle: handle, continuation: continuation) { return }
                continue
            }
            continuation.yield(converted)
            if event.event_id == MPV_EVENT_SHUTDOWN { return }
        }
    }

    /// A failed load's END_FILE, after the log lines that say why.
    ///
    /// mpv hands out queued events before log messages, so the lines a failing video output
    /// wrote before the load ended can come after its END_FILE, and the failure is then
    /// explained with mpv's generic "something happened" (seen on a loaded CI machine). What is
    /// ready now is read without waiting: log lines pass first, other events keep their order
    /// after the END_FILE. Returns true when a SHUTDOWN was among them.
    private static func yieldWithItsLog(
        _ endFile: MpvEvent, handle: MpvHandle, continuation: AsyncStream<MpvEvent>.Continuation
    ) -> Bool {
        var after: [MpvEvent] = []
        var shutdown = false
        for _ in 0..<256 {
            guard let event = mpv_wait_event(handle.raw, 0)?.pointee, event.event_id != MPV_EVENT_NONE else { break }
            guard let converted = convert(event) else { continue }
            if case .log = converted { continuation.yield(converted) } else { after.append(converted) }
            if event.event_id == MPV_EVENT_SHUTDOWN {
                shutdown = true
                break
            }
        }
        continuation.yield(endFile)
        for event in after { continuation.yield(event) }
        return shutdown
    }

    static func convert(_ event: mpv_event) -> MpvEvent? {
        switch event.event_id {
        case MPV_EVENT_SHUTDOWN:
            return .shutdown
        case MPV_EVENT_START_FILE:
            let data = event.data?.assumingMemoryBound(to: mpv_event_start_file.self).pointee
            return .startFile(entry: data?.playlist_entry_id ?? -1)
        case MPV_EVENT_FILE_LOADED:
            return .fileLoaded
        case MPV_EVENT_SEEK:
            return .seek
        case MPV_EVENT_PLAYBACK_RESTART:
            return .playbackRestart
        case MPV_EVENT_END_FILE:
            guard let data = event.data?.assumingMemoryBound(to: mpv_event_end_file.self).pointee else { return nil }
            let reason = MpvEndFileReason(data.reason)
            let error = data.error < 0 ? MpvError(code: data.error, operation: "loadfile") : nil
            return .endFile(reason: reason, error: error, entry: data.playlist_entry_id)
        case MPV_EVENT_PROPERTY_CHANGE:
            guard let data = event.data?.assumingMemoryBound(to: mpv_event_property.self).pointee,
                let name = data.name.map({ String(cString: $0) })
            else { return nil }
            if data.format == MPV_FORMAT_NODE, let nodePointer = data.data?.assumingMemoryBound(to: mpv_node.self) {
                return .propertyChange(name: name, value: MpvNode(copying: nodePointer.pointee), at: SystemClock.monotonicSeconds())
            }
            return .propertyChange(name: name, value: nil, at: SystemClock.monotonicSeconds())
        case MPV_EVENT_CLIENT_MESSAGE:
            guard let data = event.data?.assumingMemoryBound(to: mpv_event_client_message.self).pointee,
                data.num_args > 0, data.num_args <= 64, let args = data.args
            else { return nil }
            return .clientMessage((0..<Int(data.num_args)).map { args[$0].map { String(cString: $0) } ?? "" })
        case MPV_EVENT_LOG_MESSAGE:
            guard let data = event.data?.assumingMemoryBound(to: mpv_event_log_message.self).pointee else { return nil }
            let text = data.text.map { String(cString: $0) } ?? ""
            return .log(
                level: data.level.map { String(cString: $0) } ?? "",
                prefix: data.prefix.map { String(cString: $0) } ?? "",
                text: text.hasSuffix("\n") ? String(text.dropLast()) : text)
        default:
            return nil
        }
    }
}
