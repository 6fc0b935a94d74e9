/// A Cowatch room's playlist as Syncplay clients see it, and a Syncplay client's change to that
/// list as the one room edit that makes it.
///
/// Syncplay's shared playlist is a list of names (a file's basename, which each client finds in
/// its own media directories, or a URL), without repeats, that a client replaces whole. Cowatch's
/// entries are files by identity (their names only a hint) and URLs, numbered by the server, and
/// the same media may be listed twice. So the view shows each entry by its name, the first of
/// any repeated name only, and keeps which entry each name stands for. A client's new list is
/// read back as one edit — an entry removed, one moved, a URL inserted, or the current entry
/// chosen — made on the entries the names stand for. Anything else (a file the room does not
/// list, several changes at once) cannot be made from names and is refused with a sentence:
/// a Cowatch viewer adds files, by content.
///
/// Threading: a value type. Errors: `CowatchError` `invalid-argument` with a sentence for the
/// Syncplay user.
public struct SyncplayPlaylistView: Sendable, Equatable {
    /// The names, in the room's order.
    public private(set) var names: [String] = []
    /// The entry each name stands for.
    public private(set) var ids: [PlaylistEntry.ID] = []

    public init() {}

    /// The list Syncplay clients are shown for `state`: at most Syncplay's own bound of names,
    /// each a name a Syncplay client can take (`SyncplayText.check`, at most
    /// `SyncplayGuest.serverFeatures.maxFilenameLength` characters).
    public init(_ state: PlaylistState) {
        var seen: Set<String> = []
        for entry in state.entries where names.count < SyncplayCodec.maxPlaylistFiles {
            guard let name = Self.name(of: entry), seen.insert(name).inserted else { continue }
            names.append(name)
            ids.append(entry.id)
        }
    }

    /// Where `id` is in the view.
    public func index(of id: PlaylistEntry.ID?) -> Int? {
        id.flatMap { ids.firstIndex(of: $0) }
    }

    /// An entry's name for Syncplay: a file's name, a URL as it is; nil when Syncplay could not
    /// take it (too long, or characters it would not show).
    static func name(of entry: PlaylistEntry) -> String? {
        let name: String
        switch entry.media {
        case .file(let file): name = file.name
        case .url(let url): name = url
        }
        guard !name.isEmpty, name.count <= maxNameCharacters, (try? SyncplayText.check(name, "a playlist name")) != nil,
            !name.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay)
        else { return nil }
        return name
    }

    /// Syncplay's bound on a file name.
    static let maxNameCharacters = 250

    /// The one edit that turns the room's list into `files` (a Syncplay client's whole new list);
    /// nil when `files` is the list already. `state` is the room's list this view was made of.
    public func edit(to files: [String], in state: PlaylistState) throws(CowatchError) -> PlaylistEdit? {
        if files == names { return nil }
        if files.count + 1 == names.count, let gone = Self.removedIndex(from: names, to: files) {
            return .remove(ids[gone])
        }
        if files.count == names.count + 1, let added = Self.removedIndex(from: files, to: names) {
            let name = files[added]
            guard Self.isURL(name) else {
                throw CowatchError(
                    .invalidArgument,
                    Self.notListed(name))
            }
            // Before the entry that follows it in the client's list (at the end when none does).
            let at = added < names.count ? (state.entries.firstIndex { $0.id == ids[added] } ?? state.entries.count) : state.entries.count
            return .insert([PlaylistItem(url: name)], at: at)
        }
        if files.count == names.count, Set(files) == Set(names), let (from, to) = Self.movedIndex(from: names, to: files) {
            // Where the room's list puts it: right after the entry it follows in the client's
            // list, counted without it (first when it follows none).
            let moved = ids[from]
            let others = state.entries.filter { $0.id != moved }
            guard to > 0, let before = names.firstIndex(of: files[to - 1]) else { return .move(moved, to: 0) }
            return .move(moved, to: (others.firstIndex { $0.id == ids[before] } ?? others.count - 1) + 1)
        }
        let unknown = files.filter { !names.contains($0) && !Self.isURL($0) }
        if let first = unknown.first {
            throw CowatchError(
                .invalidArgument,
                Self.notListed(first))
        }
        throw CowatchError(.invalidArgument, "change one entry of this Cowatch room's playlist at a time (remove, move, or add a URL)")
    }

    /// The room edit that plays the entry at Syncplay index `index`; nil when it is the current
    /// one already. Errors: `invalid-argument` for an index outside the list.
    public func choose(_ index: Int, in state: PlaylistState) throws(CowatchError) -> PlaylistEdit? {
        guard ids.indices.contains(index) else {
            throw CowatchError(.invalidArgument, "there is no entry \(index + 1) in this Cowatch room's playlist")
        }
        return state.current == ids[index] ? nil : .jump(ids[index])
    }

    /// The index of `longer` that, removed, leaves `shorter`.
    static func removedIndex(from longer: [String], to shorter: [String]) -> Int? {
        guard longer.count == shorter.count + 1 else { return nil }
        let index = shorter.indices.first { longer[$0] != shorter[$0] } ?? shorter.count
        var rest = longer
        rest.remove(at: index)
        return rest == shorter ? index : nil
    }

    /// The one element of `old` that, moved, makes `new`: its index in each.
    static func movedIndex(from old: [String], to new: [String]) -> (from: Int, to: Int)? {
        for from in old.indices {
            var rest = old
            let name = rest.remove(at: from)
            guard let to = new.firstIndex(of: name) else { return nil }
            var placed = rest
            placed.insert(name, at: to)
            if placed == new { return (from, to) }
        }
        return nil
    }

    static func notListed(_ name: String) -> String {
        "\(name) is not in this Cowatch room's playlist. A Cowatch viewer adds files (cowatch playlist add): they are known by their content, not their name."
    }

    static func isURL(_ name: String) -> Bool {
        guard let colon = name.firstIndex(of: ":") else { return false }
        return name[name.index(after: colon)...].hasPrefix("//") && name[..<colon].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
