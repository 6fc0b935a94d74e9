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
        if let room = status.extra["room"]?.objectValue {
            let roomName = room["room"]?.stringValue ?? "?"
            let server = room["server"]?.stringValue ?? "?"
            var session = room["session"]?.stringValue ?? "?"
            if let reason = room["reason"]?.stringValue {
                session += ": " + (room["ended_by"]?.stringValue.map { "ended by \($0)" } ?? reason)
            }
            lines.append("  room: \(roomName) on \(server) (\(session))")
            if let reach = room["reachability"]?.objectValue, let summary = reach["summary"]?.stringValue {
                lines.append("  reach: \(summary)")
                if let advice = reach["advice"]?.stringValue { lines.append("         what to do: \(advice)") }
            }
            if let role = room["role"]?.stringValue {
                let managed = room["managed"]?.boolValue == true ? ", managed: only the owner and operators control playback" : ""
                lines.append("  role: \(role)\(managed)")
            }
            if let activity = room["activity"]?.objectValue {
                let title = activity["title"]?.stringValue ?? "?"
                let type = activity["type"]?.stringValue ?? "watch"
                let by = activity["opened_by"]?.stringValue.map { ", opened by \($0)" } ?? ""
                lines.append("  activity: \(type) \(title)\(by)")
            }
            var me: [String] = [room["ready"]?.boolValue == true ? "ready" : "not ready"]
            if room["wait_for_me"]?.boolValue == false { me.append("don't wait for me") }
            if let stall = room["stall"]?.stringValue { me.append(stall) }
            lines.append("  you: " + me.joined(separator: ", "))
            if let offer = room["open_offer"]?.objectValue {
                let by = offer["by"]?.stringValue ?? "someone"
                lines.append("  offered: \(by) wants everyone to open \(offer["url"]?.stringValue ?? "?") (cowatch accept)")
            }
        }
        if let clock = status.extra["clock"]?.objectValue, let rtt = clock["rtt"]?.numberValue,
            let uncertainty = clock["uncertainty"]?.numberValue
        {
            lines.append("  clock: rtt \(milliseconds(rtt)), uncertainty ±\(milliseconds(uncertainty))")
        }
        if let drift = status.extra["drift"]?.objectValue, let error = drift["error"]?.numberValue {
            lines.append("  drift: \(milliseconds(error)) from the group")
        }
        return lines.joined(separator: "\n")
    }

    static func event(_ event: ControlEvent) -> String {
        switch event.name {
        case ControlEvent.Name.notice:
            return event.fields["text"]?.stringValue ?? "notice: \(JSONValue.object(event.fields).jsonString)"
        case ControlEvent.Name.state:
            guard let status = PlayerStatus(json: .object(event.fields)) else { return "state changed" }
            let state = status.eof ? "at the end" : (status.paused ? "paused" : "playing")
            return "\(state) at \(status.position.map { MediaTime.format($0, fraction: 1) } ?? "--:--"), speed \(rate(status.speed))"
        case ControlEvent.Name.endOfFile:
            let at = event.fields["position"]?.numberValue.map { " at \(MediaTime.format($0))" } ?? ""
            return "reached the end of the media\(at)"
        case ControlEvent.Name.session:
            let state = event.fields["state"]?.stringValue ?? "?"
            switch event.fields["reason"]?.stringValue {
            case nil: return "session: \(state)"
            case "ended-by"?: return "session: ended by \(event.fields["by"]?.stringValue ?? "?")"
            case "removed"? where event.fields["code"] == "kicked": return "session: removed from the room (kicked)"
            case "removed"?: return "session: removed by the server (\(event.fields["code"]?.stringValue ?? "?"))"
            case let reason?: return "session: \(state) (\(reason))"
            }
        case ControlEvent.Name.openOffer:
            let by = event.fields["by"]?.stringValue ?? "someone"
            return "\(by) wants everyone to open \(event.fields["url"]?.stringValue ?? "?") — cowatch accept to open it"
        case ControlEvent.Name.error:
            return "error: \(event.fields["message"]?.stringValue ?? event.fields["code"]?.stringValue ?? "unknown")"
        case ControlEvent.Name.chat:
            let earlier = event.fields["history"] == true ? " (earlier)" : ""
            return "<\(event.fields["participant"]?.stringValue ?? "?")> \(event.fields["text"]?.stringValue ?? "")\(earlier)"
        case ControlEvent.Name.message:
            let payload = event.fields["payload"].map { $0.jsonString } ?? "null"
            return "message from \(event.fields["participant"]?.stringValue ?? "?") on \(event.fields["topic"]?.stringValue ?? "?"): \(payload)"
        case ControlEvent.Name.attachmentAdded:
            let earlier = event.fields["history"] == true ? " (earlier)" : ""
            let id = event.fields["id"]?.stringValue?.prefix(12) ?? "?"
            return "\(event.fields["participant"]?.stringValue ?? "?") shared \(event.fields["name"]?.stringValue ?? "?") (\(id))\(earlier)"
        case ControlEvent.Name.attachmentRemoved:
            return "\(event.fields["participant"]?.stringValue ?? "?") removed \(event.fields["name"]?.stringValue ?? event.fields["id"]?.stringValue ?? "?")"
        case ControlEvent.Name.attachmentProgress:
            let done = event.fields["done"]?.numberValue ?? 0
            let total = max(1, event.fields["total"]?.numberValue ?? 1)
            let state = event.fields["state"]?.stringValue ?? "running"
            let detail = state == "failed" ? " failed: \(event.fields["message"]?.stringValue ?? "?")" : " \(Int(done * 100 / total))%"
            return "\(event.fields["direction"]?.stringValue ?? "transfer") \(event.fields["name"]?.stringValue ?? "?")\(detail)"
        default:
            return "\(event.name): \(JSONValue.object(event.fields).jsonString)"
        }
    }

    /// A participant's drift in `cowatch participants`: null (nothing measured yet: the daemon
    /// reports none before its player has reached the group's place) is "not measured yet".
    static func participantDrift(_ value: JSONValue?) -> String {
        guard let drift = value?.numberValue, drift.isFinite else {
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
        let negative = scaled < 0
        let magnitude = Int(abs(scaled))
        let cents = magnitude % 100
        self = (negative ? "-" : "") + "\(magnitude / 100)." + (cents < 10 ? "0\(cents)" : "\(cents)")
    }
}
