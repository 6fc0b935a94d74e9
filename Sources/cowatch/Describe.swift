import CowatchCore

/// Human sentences for statuses and events.
enum Describe {
    /// `state`, when given, replaces the line "paused at 0:01:30 / 1:30:00, speed 1.00×" (a
    /// status caught mid-seek says where playback is going instead).
    static func status(_ status: PlayerStatus, state stateLine: String? = nil) -> String {
        let state = status.eof ? "at the end" : (status.paused ? "paused" : "playing")
        let position = status.position.map { MediaTime.format($0) } ?? "--:--"
        let duration = status.duration.map { MediaTime.format($0) } ?? "--:--"
        var lines = [
            "\(status.name): \(status.title ?? status.media)",
            "  " + (stateLine ?? "\(state) at \(position) / \(duration), speed \(rate(status.speed))"),
            "  media: \(status.media)",
        ]
        if let room = status.room { lines += roomLines(room) }
        if let clock = status.clock {
            lines.append("  clock: rtt \(milliseconds(clock.rtt)), uncertainty ±\(milliseconds(clock.uncertainty))")
        }
        if let error = status.drift?.error {
            lines.append("  drift: \(milliseconds(error)) from the group")
        }
        return lines.joined(separator: "\n")
    }

    /// The lines of `cowatch status` about the room.
    private static func roomLines(_ room: RoomStatus) -> [String] {
        var lines: [String] = []
        var session = room.session
        if let reason = room.reason {
            session += ": " + (room.endedBy.map { "ended by \($0)" } ?? reason)
        }
        lines.append("  room: \(room.room) on \(room.server) (\(session))")
        if let reach = room.reachability {
            lines.append("  reach: \(reach.summary)")
            if let advice = reach.advice { lines.append("         what to do: \(advice)") }
        }
        let managed = room.managed ? ", managed: only the owner and operators control playback" : ""
        lines.append("  role: \(room.role)\(managed)")
        let by = room.activity.openedBy.map { ", opened by \($0)" } ?? ""
        lines.append("  activity: \(room.activity.type) \(room.activity.title)\(by)")
        var me: [String] = [room.ready ? "ready" : "not ready"]
        if !room.waitForMe { me.append("don't wait for me") }
        if let stall = room.stall { me.append(stall) }
        lines.append("  you: " + me.joined(separator: ", "))
        if let offer = room.openOffer {
            lines.append("  offered: \(offer.by ?? "someone") wants everyone to open \(offer.url) (cowatch accept)")
        }
        return lines
    }

    static func event(_ event: ControlEvent) -> String {
        switch event {
        case .notice(let notice):
            return notice.text
        case .state(let status):
            let state = status.eof ? "at the end" : (status.paused ? "paused" : "playing")
            return "\(state) at \(status.position.map { MediaTime.format($0, fraction: 1) } ?? "--:--"), speed \(rate(status.speed))"
        case .endOfFile(let position):
            let at = position.map { " at \(MediaTime.format($0))" } ?? ""
            return "reached the end of the media\(at)"
        case .session(let state):
            switch state.reason {
            case nil: return "session: \(state.name)"
            case .endedBy(let by)?: return "session: ended by \(by)"
            case .removed(.kicked)?: return "session: removed from the room (kicked)"
            case .removed(let code)?: return "session: removed by the server (\(code.rawValue))"
            case let reason?: return "session: \(state.name) (\(reason.code))"
            }
        case .openOffer(let offer):
            return "\(offer.by ?? "someone") wants everyone to open \(offer.url) — cowatch accept to open it"
        case .error(let error):
            return "error: \(error.message)"
        case .chat(let line):
            return "<\(line.from)> \(line.text)\(line.history ? " (earlier)" : "")"
        case .message(let message):
            return "message from \(message.participant) on \(message.topic): \(message.payload.jsonString)"
        case .attachmentAdded(let attachment, let history):
            return "\(attachment.from) shared \(attachment.name) (\(attachment.id.prefix(12)))\(history ? " (earlier)" : "")"
        case .attachmentRemoved(let removal):
            return "\(removal.participant) removed \(removal.name ?? removal.id)"
        case .attachmentProgress(let progress):
            let percent = Int(Double(progress.done) * 100 / Double(max(1, progress.total)))
            let detail: String
            if case .failed(let error) = progress.stage { detail = " failed: \(error.message)" } else { detail = " \(percent)%" }
            return "\(progress.direction.rawValue) \(progress.name)\(detail)"
        case .playlist(let playlist):
            if let change = playlist.change { return change }
            let state = playlist.state
            let current = state.current.map { ", #\($0) current" } ?? ""
            return "playlist: \(state.entries.count == 1 ? "1 entry" : "\(state.entries.count) entries")\(current)"
        case .unknown(let name, let fields):
            // A notice with an action this version does not know still says what happened.
            if name == ControlEvent.Kind.notice.rawValue, let text = fields["text"]?.stringValue { return text }
            return "\(name): \(JSONValue.object(fields).jsonString)"
        }
    }

    /// A participant's drift in `cowatch participants`: null (nothing measured yet: the daemon
    /// reports none before its player has reached the group's place) is "not measured yet".
    static func participantDrift(_ value: Double?) -> String {
        guard let drift = value, drift.isFinite else {
            return "drift not measured yet"
        }
        return "drift \(milliseconds(drift))"
    }

    static func rate(_ speed: Double) -> String {
        let text = String(format2: speed)
        return "\(text)×"
    }

    static func milliseconds(_ seconds: Double) -> String {
        "\(String(format2: seconds * 1000)) ms"
    }
}

extension String {
    /// Two decimals without Foundation's String(format:).
    init(format2 value: Double) {
        let scaled = (value * 100).rounded()
        // A number no player reports (a broken daemon's) is shown as such rather than trapping.
        guard scaled.isFinite, abs(scaled) < 1e15 else {
            self = "?"
            return
        }
        let negative = scaled < 0
        let magnitude = Int(abs(scaled))
        let cents = magnitude % 100
        self = (negative ? "-" : "") + "\(magnitude / 100)." + (cents < 10 ? "0\(cents)" : "\(cents)")
    }
}
