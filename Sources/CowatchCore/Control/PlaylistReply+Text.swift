/// The playlist as people read it (`cowatch playlist`) and as an extended M3U file
/// (`cowatch playlist save`): pure functions of the reply, so they are tested here rather than
/// through the CLI.
///
/// Threading: pure functions of a value type.
extension PlaylistReply {
    /// The list, one line an entry (`▶` marks the current one), then the settings in one line:
    ///
    ///     ▶ #2  Episode 2  (0:22:10)  added by bob  — cy lacks it
    ///       #3  Episode 3  (0:21:40)  added by ann  — you and cy lack it; dan has not said
    ///     repeat none · shuffle off · editing: owner and operators (in a managed room) · countdown 3 s
    public var lines: [String] {
        (entries.isEmpty ? ["the playlist is empty"] : entries.map(Self.line)) + [settingsLine]
    }

    /// One entry's line.
    public static func line(_ entry: Entry) -> String {
        var line = (entry.current ? "▶ " : "  ") + "#\(entry.number)  \(shown(entry.title))"
        if let duration = entry.duration { line += "  (\(MediaTime.format(duration)))" }
        line += "  added by \(shown(entry.addedBy))"
        let availability = availability(entry)
        if !availability.isEmpty { line += "  — " + availability }
        return line
    }

    /// Who lacks the entry and who has not said: "you and bob lack it; dan has not said".
    static func availability(_ entry: Entry) -> String {
        var parts: [String] = []
        let lacking = (entry.here ? [] : ["you"]) + entry.lacking.map(shown)
        if !lacking.isEmpty {
            let single = lacking.count == 1 && lacking[0] != "you"
            if entry.kind == .url, !entry.here, lacking.count == 1 {
                parts.append("you cannot open it here")
            } else {
                parts.append("\(list(lacking)) \(single ? "lacks" : "lack") it")
            }
        }
        if !entry.unknown.isEmpty {
            parts.append("\(list(entry.unknown.map(shown))) \(entry.unknown.count == 1 ? "has" : "have") not said")
        }
        return parts.joined(separator: "; ")
    }

    /// Repeat, shuffle, who edits, the countdown.
    public var settingsLine: String {
        let editors = editing == .open ? "everyone" : "owner and operators (in a managed room)"
        return "repeat \(repeatMode.rawValue) · shuffle \(shuffle ? "on" : "off") · editing: \(editors) · countdown \(Self.seconds(countdown))"
    }

    /// The list as an extended M3U playlist: `#EXTM3U`, then for each entry an `#EXTINF:SECONDS,TITLE`
    /// line (-1 when the duration is unknown) and this daemon's own path for a file (`local`) or the
    /// URL; a file this daemon does not have gets only a comment, `# missing here: NAME`.
    public var m3u: String {
        var lines = ["#EXTM3U"]
        for entry in entries {
            guard let target = Self.m3uTarget(entry) else {
                lines.append("# missing here: \(Self.oneLine(entry.name ?? entry.title))")
                continue
            }
            let seconds = entry.duration.map { $0.isFinite && $0 >= 0 && $0 < 1e12 ? Int($0.rounded()) : -1 } ?? -1
            lines.append("#EXTINF:\(seconds),\(Self.oneLine(entry.title))")
            lines.append(target)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The entries `m3u` can only name in a comment: files this daemon does not have.
    public var missingHere: [Entry] {
        entries.filter { Self.m3uTarget($0) == nil }
    }

    /// What an M3U line plays for `entry`: this daemon's own file, or the URL; nil when it has
    /// neither (or one that does not fit on a line).
    static func m3uTarget(_ entry: Entry) -> String? {
        let target = entry.kind == .file ? entry.local : entry.url
        guard let target, !target.isEmpty, ControlCharacters.isClean(target) else { return nil }
        return target
    }

    // MARK: Words

    /// Text from the room on one line: controls and invisibles become spaces.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { ControlCharacters.isUnfitForDisplay($0) ? " " : $0 }))
    }

    /// Text from the room as shown in a line of the list: on one line, at most 120 characters.
    static func shown(_ text: String) -> String {
        let line = oneLine(text)
        return line.count > 120 ? String(line.prefix(119)) + "…" : line
    }

    /// "bob", "bob and cy", "bob, cy and dan".
    static func list(_ names: [String]) -> String {
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " and " + (names.last ?? "")
    }

    static func seconds(_ value: Double) -> String {
        guard value.isFinite else { return "? s" }
        guard abs(value) < 1e9 else { return "\(value) s" }
        // Whole seconds without a fraction; otherwise at most two decimals (2.5 s, 0.25 s).
        return value.rounded() == value ? "\(Int(value)) s" : "\((value * 100).rounded() / 100) s"
    }
}
