/// A Syncplay room's shared playlist as the daemon's room playlist (see `SyncplayBridge`).
///
/// Syncplay's list is names (files found by name in each viewer's media directories, or URLs)
/// and an index. The daemon knows entries by identity: each name is identified once by the shell
/// (`Action.identify`: this machine's file of that name, from `--media-dir` or the daemon's own
/// media), and one this machine lacks is listed with its name only (it cannot match a file). A
/// new index switches the room's media, as a Cowatch room's playlist does (a new activity, its
/// `applied`, a notice naming who chose it). The daemon's own edits become Syncplay's: the list
/// replaced whole, the index chosen (with a rewind to the start, as Syncplay's client does),
/// the next entry when its player reached the end. Repeat, shuffle, undo, countdown and editing
/// rights do not exist in Syncplay and are refused `unsupported`.
extension SyncplayBridge {
    /// Who added an entry, as the daemon lists it: Syncplay does not say.
    static let entryAdder = "syncplay"
    /// A fingerprint no file has: an entry this machine has no file for.
    static let unknownFingerprint = String(repeating: "0", count: MediaIdentity.fingerprintLength)

    /// The Syncplay server said the room's list (`by` changed it; nil on joining).
    mutating func syncplayList(_ files: [String], by: String?) -> [Action] {
        guard files != sharedNames else { return [] }
        sharedNames = files
        for name in files where entryIDs[name] == nil {
            entryIDs[name] = nextEntryID
            nextEntryID += 1
        }
        playlistVersion += 1
        var actions = identifyUnknown()
        guard welcomed else { return actions }
        let who = by.map(Self.shown) ?? "the room"
        actions.append(.deliver(.playlist(
            playlistState(), change: PlaylistChange(actor: by.map(Self.shown), kind: "replace", text: "\(who) changed the playlist (\(files.count) entries)"),
            requestID: nil)))
        return actions
    }

    /// The Syncplay server said the room's index (`by` chose it; nil on joining).
    mutating func syncplayIndex(_ index: Int, by: String?, now: Double) -> [Action] {
        guard index != sharedIndex else { return [] }
        sharedIndex = index
        guard welcomed else { return [] }
        let who = by.map(Self.shown) ?? "the room"
        if let name = currentName, Self.fileName(name) == playingName {
            // The file the daemon plays already (a Syncplay client that listed its own file, as
            // it does on joining an empty room): the entry is what plays; nothing reloads, as
            // Syncplay's own client does.
            currentEntryActivity = activityID
            playlistVersion += 1
            let change = PlaylistChange(actor: who, kind: "jump", text: "\(who) chose #\(index + 1) (\(Self.fileName(name)))", entry: entryIDs[name])
            return [.deliver(.playlist(playlistState(), change: change, requestID: nil))]
        }
        return switchToCurrent(by: who, requestID: nil, now: now)
    }

    /// The shell identified names (those it found a file for; the others stay unknown).
    public mutating func identified(_ found: [String: MediaIdentity], now: Double) -> [Action] {
        for (name, identity) in found { identities[name] = identity }
        identifying = []
        guard welcomed else { return [] }
        playlistVersion += 1
        return [.deliver(.playlist(playlistState(), change: nil, requestID: nil))]
    }

    /// Names not yet identified, for the shell.
    private mutating func identifyUnknown() -> [Action] {
        let unknown = sharedNames.filter { identities[$0] == nil && !SyncplayPlaylistView.isURL($0) && !identifying.contains($0) }
        guard !unknown.isEmpty else { return [] }
        identifying.formUnion(unknown)
        return [.identify(unknown)]
    }

    /// The list as the daemon's room has it.
    func playlistState() -> PlaylistState {
        let entries = sharedNames.compactMap { name -> PlaylistEntry? in
            guard let id = entryIDs[name] else { return nil }
            let media: PlaylistEntry.Media
            if SyncplayPlaylistView.isURL(name) {
                media = .url(name)
            } else {
                media = .file(identities[name] ?? MediaIdentity(size: 0, fingerprint: Self.unknownFingerprint, name: Self.fileName(name)))
            }
            return PlaylistEntry(id: id, media: media, addedBy: Self.entryAdder)
        }
        let current = currentName.flatMap { entryIDs[$0] }
        return PlaylistState(
            version: playlistVersion, entries: entries, current: current, activity: current == nil ? nil : currentEntryActivity,
            repeatMode: .none, shuffle: false, openEditing: true, countdown: 0)
    }

    /// The name at the room's index, if the index is in the list.
    var currentName: String? {
        sharedIndex.flatMap { sharedNames.indices.contains($0) ? sharedNames[$0] : nil }
    }

    /// The daemon's room plays the entry at the index now: a new activity, opened by `by`.
    private mutating func switchToCurrent(by: String, requestID: Int?, now: Double) -> [Action] {
        guard let name = currentName else { return [] }
        activityID += 1
        currentEntryActivity = activityID
        playlistVersion += 1
        let number = (sharedIndex ?? 0) + 1
        let change = PlaylistChange(actor: by, kind: "jump", text: "\(by) chose #\(number) (\(Self.fileName(name)))", entry: entryIDs[name])
        let paused = client.timeline?.paused ?? true
        let timeline = nextTimeline(SyncplayTimeline(position: 0, at: now, paused: paused, setBy: by))
        let activity = Activity(id: activityID, url: Self.fileName(name), openedBy: by)
        playingName = Self.fileName(name)
        return [
            .deliver(.playlist(playlistState(), change: change, requestID: requestID)),
            .deliver(.applied(timeline: timeline, notice: Notice(actor: by, action: .open, title: Self.fileName(name)), actionID: nil, activity: activity)),
        ]
    }

    /// The daemon edits the list.
    mutating func playlistEdit(_ request: PlaylistEditRequest, now: Double) -> [Action] {
        guard welcomed else {
            return [Self.refused(request.id, .notInRoom, "not in the Syncplay room yet")]
        }
        if let refusal = notControlling(request.id) { return [refusal] }
        let me = daemonName ?? client.username
        var names = sharedNames
        let currentIndex = sharedIndex.flatMap { names.indices.contains($0) ? $0 : nil }
        func position(of id: PlaylistEntry.ID) -> Int? { names.firstIndex { entryIDs[$0] == id } }
        switch request.edit {
        case .add(let items, let next):
            let added = itemNames(items)
            names.insert(contentsOf: added, at: next ? (currentIndex.map { $0 + 1 } ?? names.count) : names.count)
        case .insert(let items, let at):
            let added = itemNames(items)
            names.insert(contentsOf: added, at: min(max(0, at), names.count))
        case .replace(let items):
            let added = itemNames(items)
            names = added
        case .remove(let id):
            guard let at = position(of: id) else { return [Self.refused(request.id, .invalidArgument, "that entry is not in the Syncplay room's playlist")] }
            names.remove(at: at)
        case .move(let id, let to):
            guard let at = position(of: id) else { return [Self.refused(request.id, .invalidArgument, "that entry is not in the Syncplay room's playlist")] }
            let name = names.remove(at: at)
            names.insert(name, at: min(max(0, to), names.count))
        case .clear:
            names = []
        case .jump(let id):
            guard let at = position(of: id) else { return [Self.refused(request.id, .invalidArgument, "that entry is not in the Syncplay room's playlist")] }
            return choose(at, by: me, requestID: request.id, now: now)
        case .next, .previous:
            let step = request.edit == .next ? 1 : -1
            let target = (currentIndex ?? -1) + step
            guard names.indices.contains(target) else {
                return [Self.refused(request.id, .invalidArgument, request.edit == .next ? "there is no next entry" : "there is no previous entry")]
            }
            return choose(target, by: me, requestID: request.id, now: now)
        case .undo, .setRepeat, .setShuffle, .setEditing, .setCountdown:
            return [Self.unsupported(request.id, "a Syncplay room's playlist has no \(request.edit.op): its list and its current entry are all it shares")]
        }
        guard Set(names).count == names.count else {
            return [Self.refused(request.id, .invalidArgument, "a Syncplay playlist lists each file once, and this name is in it already")]
        }
        guard names.count <= SyncplayCodec.maxPlaylistFiles else {
            return [Self.refused(request.id, .playlistFull, "a Syncplay playlist holds at most \(SyncplayCodec.maxPlaylistFiles) entries")]
        }
        // Syncplay keeps the index where it is; the entry it points at may change (as there).
        var actions: [Action] = [.syncplay([.set([.playlistChange(files: names, user: nil)])])]
        sharedNames = names
        for name in names where entryIDs[name] == nil {
            entryIDs[name] = nextEntryID
            nextEntryID += 1
        }
        playlistVersion += 1
        actions += identifyUnknown()
        let change = PlaylistChange(actor: me, kind: request.edit.op, text: "\(me) changed the playlist (\(names.count) entries)")
        actions.append(.deliver(.playlist(playlistState(), change: change, requestID: request.id)))
        return actions
    }

    /// The daemon's player reached the end of `activity`: the next entry, as Syncplay's client
    /// moves on at the end of its file.
    mutating func playlistEnded(activity: Int, now: Double) -> [Action] {
        guard welcomed, notControlling(nil) == nil, activity == currentEntryActivity, let index = sharedIndex,
            sharedNames.indices.contains(index + 1)
        else { return [] }
        return choose(index + 1, by: daemonName ?? client.username, requestID: nil, now: now)
    }

    /// We choose entry `index`: Syncplay hears the index and a rewind to the start (as its own
    /// client says them), and the daemon's room switches at once.
    private mutating func choose(_ index: Int, by me: String, requestID: Int?, now: Double) -> [Action] {
        sharedIndex = index
        var actions: [Action] = [.syncplay([.set([.playlistIndex(index: index, user: nil)])])]
        let paused = client.timeline?.paused ?? true
        actions += translate(client.localChange(paused: paused, position: 0, seek: true, now: now), now: now)
        actions += switchToCurrent(by: me, requestID: requestID, now: now)
        return actions
    }

    /// The names Syncplay lists `items` by: a file's name (its identity kept for this machine),
    /// a URL as it is.
    private mutating func itemNames(_ items: [PlaylistItem]) -> [String] {
        items.map { item in
            switch item.media {
            case .url(let url):
                return url
            case .file(let identity):
                identities[identity.name] = identity
                return identity.name
            }
        }
    }

    /// A Syncplay name as a file name hint (`MediaIdentity.name`: a basename of at most 255 bytes).
    static func fileName(_ name: String) -> String {
        let base = baseName(name)
        var cut = base
        while cut.utf8.count > MediaIdentity.maxNameBytes { cut.removeLast() }
        return cut.isEmpty ? "media" : cut
    }
}
