/// Edits: the server sequences them, one at a time, each checked against who sent it and the
/// list it was made on.
extension RoomPlaylist {
    /// Carries out one edit by `actor`, whose role is `role`, in a room that is `managed` or not.
    /// `seed` drives a shuffle (the caller gives it, so a test replays).
    ///
    /// Returns the change to tell everyone and, for `jump`, `next` and `previous`, where the
    /// group goes (`PlaylistMove.start`: the caller switches the room and calls `started`).
    /// Every accepted edit but those three raises `version` (they raise it in `started`).
    ///
    /// Errors, with nothing changed: `not-permitted` (a member of a managed room whose list is
    /// not open; `editing` by anyone but the owner), `stale-playlist` (the request's `version` or
    /// `current` is not the list's), `playlist-full` (past `maxEntries` entries or
    /// `maxListBytes`), `invalid-argument` (an unknown entry, a position out of range, no next or
    /// previous entry, nothing to undo, an entry that is not a network URL or a valid file, a
    /// title too long or with control characters, a countdown out of range).
    public mutating func apply(
        _ request: PlaylistEditRequest, by actor: String, role: Role, managed: Bool, seed: UInt64
    ) throws(CowatchError) -> PlaylistOutcome {
        let edit = request.edit
        if case .setEditing = edit {
            guard role == .owner else {
                throw .playlistNotPermitted("only the room's owner opens or closes the playlist to everyone")
            }
        } else if !Self.mayEdit(role: role, managed: managed, openEditing: openEditing) {
            throw .playlistNotPermitted("in this managed room only the owner and operators edit the playlist (the owner may open it to everyone)")
        }
        guard request.version == version, request.current == current else {
            throw .stalePlaylist(seen: request.version, version: version)
        }
        switch edit {
        case .add(let items, let next):
            return try add(items, at: next ? nextIndex : entries.count, by: actor, kind: edit.op)
        case .insert(let items, let at):
            guard (0...entries.count).contains(at) else {
                throw .invalidPlaylistEdit("position \(at) is not in 0…\(entries.count) (positions count from 0)")
            }
            return try add(items, at: at, by: actor, kind: edit.op)
        case .remove(let id):
            let index = try existing(id)
            let removed = entries[index]
            saveForUndo()
            removeEntry(at: index)
            bump(membership: true)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op, text: "\(actor) removed #\(index + 1) (\(Self.short(removed.displayTitle)))", entry: id))
        case .move(let id, let to):
            let from = try existing(id)
            guard (0..<entries.count).contains(to) else {
                throw .invalidPlaylistEdit("position \(to) is not in 0…\(entries.count - 1) (positions count from 0)")
            }
            saveForUndo()
            let moved = entries[from]
            moveEntry(from: from, to: to)
            bump(membership: false)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op,
                text: "\(actor) moved \(Self.short(moved.displayTitle)) from #\(from + 1) to #\(to + 1)", entry: id))
        case .jump(let id):
            let index = try existing(id)
            return start(index, by: actor, kind: edit.op, verb: "skipped to")
        case .next:
            var index = nextIndex
            if index >= entries.count {
                guard repeatMode == .all, !entries.isEmpty else {
                    throw .invalidPlaylistEdit("there is no entry after the current one")
                }
                index = wrap(seed: seed)
            }
            return start(index, by: actor, kind: edit.op, verb: "skipped to")
        case .previous:
            var index = nextIndex - 2
            if current == nil { index = nextIndex - 1 }
            if index < 0 {
                guard repeatMode == .all, !entries.isEmpty else {
                    throw .invalidPlaylistEdit("there is no entry before the current one")
                }
                index = entries.count - 1
            }
            return start(index, by: actor, kind: edit.op, verb: "went back to")
        case .replace(let items):
            let fresh = try Self.checked(items)
            try fits(fresh, replacing: true)
            saveForUndo()
            entries = newEntries(fresh, by: actor)
            cursor = 0
            bump(membership: true)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op, text: "\(actor) replaced the playlist (\(Self.count(entries.count)))"))
        case .clear:
            saveForUndo()
            entries = []
            cursor = 0
            bump(membership: true)
            return PlaylistOutcome(change: PlaylistChange(actor: actor, kind: edit.op, text: "\(actor) cleared the playlist"))
        case .undo:
            guard let snapshot = undoSnapshot else { throw .invalidPlaylistEdit("there is nothing to undo") }
            let position = nextIndex
            entries = snapshot.entries
            // The group may have moved on since: where it is now counts, unless the entry it
            // plays is back in the list.
            if playing.flatMap(index(of:)) == nil {
                cursor = min(position, entries.count)
            }
            undoSnapshot = nil
            bump(membership: true)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op, text: "\(actor) undid the last change to the playlist"))
        case .setRepeat(let mode):
            repeatMode = mode
            bump(membership: false)
            let text = switch mode {
            case .none: "\(actor) turned repeat off"
            case .one: "\(actor) set the playlist to repeat the current entry"
            case .all: "\(actor) set the playlist to repeat all"
            }
            return PlaylistOutcome(change: PlaylistChange(actor: actor, kind: edit.op, text: text))
        case .setShuffle(let on):
            shuffle = on
            if on {
                saveForUndo()
                Self.shuffle(&entries, from: nextIndex, seed: seed)
            }
            bump(membership: false)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op,
                text: on ? "\(actor) shuffled the rest of the playlist" : "\(actor) turned shuffle off"))
        case .setEditing(let open):
            openEditing = open
            bump(membership: false)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op,
                text: open ? "\(actor) let everyone edit the playlist" : "\(actor) let only the owner and operators edit the playlist"))
        case .setCountdown(let seconds):
            guard seconds.isFinite, (0...Self.maxCountdown).contains(seconds) else {
                throw .invalidPlaylistEdit("the countdown is 0–\(Int(Self.maxCountdown)) seconds")
            }
            countdown = seconds
            bump(membership: false)
            return PlaylistOutcome(change: PlaylistChange(
                actor: actor, kind: edit.op, text: "\(actor) set the playlist's countdown to \(Self.seconds(seconds))"))
        }
    }

    // MARK: Steps

    private mutating func add(_ items: [PlaylistItem], at index: Int, by actor: String, kind: String) throws(CowatchError) -> PlaylistOutcome {
        guard !items.isEmpty else { throw .invalidPlaylistEdit("there is nothing to add") }
        let fresh = try Self.checked(items)
        try fits(fresh, replacing: false)
        saveForUndo()
        let added = newEntries(fresh, by: actor)
        insertEntries(added, at: index)
        bump(membership: true)
        let text = added.count == 1
            ? "\(actor) added \(Self.short(added[0].displayTitle)) as #\(index + 1)"
            : "\(actor) added \(added.count) entries as #\(index + 1)–#\(index + added.count)"
        return PlaylistOutcome(change: PlaylistChange(actor: actor, kind: kind, text: text, entry: added.first?.id))
    }

    /// A switch to the entry at `index`, asked for by `actor`.
    private func start(_ index: Int, by actor: String, kind: String, verb: String) -> PlaylistOutcome {
        let entry = entries[index]
        return PlaylistOutcome(
            change: PlaylistChange(
                actor: actor, kind: kind, text: "\(actor) \(verb) #\(index + 1) (\(Self.short(entry.displayTitle)))", entry: entry.id),
            move: .start(entry.id, openedBy: actor))
    }

    /// The position of entry `id`; `invalid-argument` when it is not in the list.
    private func existing(_ id: PlaylistEntry.ID) throws(CowatchError) -> Int {
        guard let index = index(of: id) else { throw .invalidPlaylistEdit("there is no entry with id \(id) in the playlist") }
        return index
    }

    /// The items as entries added by `actor`, with the next ids.
    private mutating func newEntries(_ items: [PlaylistItem], by actor: String) -> [PlaylistEntry] {
        var added: [PlaylistEntry] = []
        added.reserveCapacity(items.count)
        for item in items {
            added.append(PlaylistEntry(id: nextID, media: item.media, title: item.title, addedBy: actor))
            nextID += 1
        }
        return added
    }

    /// `fresh` fits beside the entries kept (none, when `replacing`): `playlist-full` otherwise.
    private func fits(_ fresh: [PlaylistItem], replacing: Bool) throws(CowatchError) {
        let kept = replacing ? [] : entries
        guard kept.count + fresh.count <= Self.maxEntries else {
            throw .playlistFull("a playlist holds at most \(Self.maxEntries) entries (it has \(kept.count))")
        }
        // New entries counted with the longest id and adder they could get.
        let longest = String(repeating: "x", count: ParticipantName.maxLength)
        let bytes = kept.reduce(0) { $0 + $1.wireCost }
            + fresh.reduce(0) { $0 + PlaylistEntry(id: 0, media: $1.media, title: $1.title, addedBy: longest).wireCost }
        guard bytes <= Self.maxListBytes else {
            throw .playlistFull("the playlist would be too long to send (at most \(Self.maxListBytes / 1024) KiB of titles, names and URLs)")
        }
    }

    /// The items if every one may be in a room's list: a network URL (never a local path or
    /// `file:`) or a file by identity, a title of 1–200 characters; `invalid-argument` otherwise.
    static func checked(_ items: [PlaylistItem]) throws(CowatchError) -> [PlaylistItem] {
        guard items.count <= maxEntries else {
            throw .playlistFull("a playlist holds at most \(maxEntries) entries")
        }
        for item in items {
            if let title = item.title {
                guard !title.isEmpty, title.count <= PlaylistEntry.maxTitleCharacters,
                    title.utf8.count <= PlaylistEntry.maxTitleBytes,
                    !title.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay)
                else {
                    throw .invalidPlaylistEdit(
                        "a title is 1–\(PlaylistEntry.maxTitleCharacters) characters without control characters or invisibles")
                }
            }
            switch item.media {
            case .url(let url):
                guard url.utf8.count <= WireReader.maxURLBytes, ControlCharacters.isClean(url), RoomSequencer.isNetworkURL(url) else {
                    throw .playlistNotPermitted("a playlist holds network URLs (http, https, …) and files by identity, never local paths or file:")
                }
            case .file(let file):
                do {
                    try file.validate()
                } catch {
                    throw .invalidPlaylistEdit(
                        "a file entry is a name hint, a size, a 64-digit fingerprint and a duration in seconds, if known (\(error.message))")
                }
            }
        }
        return items
    }

    // MARK: The list's primitives (they keep `cursor` where the list goes on)

    /// True while the entry last started is not in the list: `cursor` is then where it goes on.
    private var detached: Bool { playing.flatMap(index(of:)) == nil }

    private mutating func insertEntries(_ added: [PlaylistEntry], at index: Int) {
        if detached, index < cursor { cursor += added.count }
        entries.insert(contentsOf: added, at: index)
    }

    private mutating func removeEntry(at index: Int) {
        if entries[index].id == playing {
            // The group keeps playing it; the list goes on with what came after it.
            cursor = index
        } else if detached, index < cursor {
            cursor -= 1
        }
        entries.remove(at: index)
    }

    private mutating func moveEntry(from: Int, to: Int) {
        let wasDetached = detached
        let entry = entries.remove(at: from)
        if wasDetached, from < cursor { cursor -= 1 }
        if wasDetached, to < cursor { cursor += 1 }
        entries.insert(entry, at: to)
    }

    private mutating func saveForUndo() {
        undoSnapshot = Snapshot(entries: entries, cursor: cursor)
    }

    /// One more version; `membership`: the set of entries changed (older availability reports
    /// no longer cover the list).
    mutating func bump(membership: Bool) {
        version += 1
        if membership { membershipVersion = version }
    }

    // MARK: Words

    /// A title as sentences quote it: at most 80 characters.
    static func short(_ title: String) -> String {
        title.count > 80 ? String(title.prefix(79)) + "…" : title
    }

    static func count(_ entries: Int) -> String {
        entries == 1 ? "1 entry" : "\(entries) entries"
    }

    static func seconds(_ value: Double) -> String {
        value.rounded() == value ? "\(Int(value)) s" : "\(Double(Int(value * 10)) / 10) s"
    }
}
