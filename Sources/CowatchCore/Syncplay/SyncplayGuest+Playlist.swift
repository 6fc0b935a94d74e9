/// The greeting of a Syncplay client and the shared playlist both ways (see `SyncplayGuest`).
extension SyncplayGuest {
    /// The lines that greet the client, in the order Syncplay's server says them: everyone's
    /// readiness, the room's playlist and its index, then the Hello and the room's state (forced).
    /// A room with an empty list (or none) sends the empty list and no index, with no user: the
    /// client then opens its own file and keeps its own list (Syncplay's way for a new room).
    mutating func greet(now: Double) -> [Action] {
        guard !greeted, let name, let room else { return [] }
        greeted = true
        // The list the client asks for next names the room's controllers as they are now.
        toldControllers = Set(participants.filter(\.role.isPrivileged).map(\.name))
        var actions: [Action] = []
        for person in participants {
            actions.append(.syncplay([.set([.ready(SyncplayReady(username: person.name, isReady: person.status.ready, manuallyInitiated: false))])]))
        }
        if view.names.isEmpty {
            actions.append(.syncplay([.set([.playlistChange(files: [], user: nil)])]))
            actions.append(.syncplay([.set([.playlistIndex(index: nil, user: nil)])]))
        } else {
            // Said by someone (who set the room's state, else the room), so the client loads the
            // current entry from its media directories instead of taking the list for its own.
            actions += playlistLines(by: setBy ?? room, always: true)
        }
        var hello = SyncplayHello(
            username: name, room: room, version: clientVersion, realVersion: "1.7.3", motd: configuration.motd, features: Self.serverFeatures)
        hello.passwordHash = nil
        actions.append(.syncplay([.hello(hello)]))
        if let rate = timelines?.current.rate, rate != 1 { actions += rateWarning(rate) }
        actions += heldChat
        heldChat = []
        return actions + forced(now: now, doSeek: true)
    }

    /// The room's list and current entry, where the client's differ (or `always`), said by `user`.
    mutating func playlistLines(by user: String, always: Bool = false) -> [Action] {
        guard greeted || always else { return [] }
        var actions: [Action] = []
        if always || view.names != clientNames {
            // A room whose list emptied leaves the client its own list (it stays the client's).
            if view.names.isEmpty && !always { return [] }
            clientNames = view.names
            actions.append(.syncplay([.set([.playlistChange(files: view.names, user: user)])]))
        }
        let index = view.index(of: playlist?.current)
        if let index, always || index != clientIndex {
            clientIndex = index
            actions.append(.syncplay([.set([.playlistIndex(index: index, user: user)])]))
        }
        return actions
    }

    /// The client replaced its list (`files`): the one room edit that makes it, or its own list
    /// echoed where the room has none to share.
    mutating func clientPlaylist(_ files: [String], retrying: Bool = false) -> [Action] {
        guard greeted else { return [] }
        guard let playlist, !view.names.isEmpty else {
            // No list to share: its own, echoed as Syncplay's server would (the client waits for
            // the echo to select its file).
            clientNames = files
            return [.syncplay([.set([.playlistChange(files: files, user: name)])])]
        }
        let before = clientNames
        clientNames = files
        do {
            guard let edit = try view.edit(to: files, in: playlist) else { return retrying ? playlistLines(by: room ?? "Cowatch") : [] }
            retryCandidate = retrying ? nil : files
            return requestEdit(edit, in: playlist)
        } catch {
            clientNames = before
            return Self.cowatchSays(error.message) + playlistLines(by: room ?? "Cowatch", always: true)
        }
    }

    /// The client chose entry `index` of its list (its own, which may run ahead of the room's
    /// while an edit of its is on its way: the entry is found by its name).
    mutating func clientPlaylistIndex(_ index: Int?) -> [Action] {
        guard greeted, let index else { return [] }
        guard let playlist, !view.names.isEmpty else {
            return [.syncplay([.set([.playlistIndex(index: index, user: name)])])]
        }
        // Its index is not taken for said: the room's answer is echoed to it (as Syncplay's server
        // echoes a choice to everyone, its maker too), and only then does its client load the file.
        let chosen = clientNames.indices.contains(index) ? view.names.firstIndex(of: clientNames[index]) : nil
        do throws(CowatchError) {
            guard let chosen else {
                throw CowatchError(.invalidArgument, "that entry is not in this Cowatch room's playlist")
            }
            guard let edit = try view.choose(chosen, in: playlist) else { return [] }
            return requestEdit(edit, in: playlist)
        } catch {
            return Self.cowatchSays(error.message) + playlistLines(by: room ?? "Cowatch", always: true)
        }
    }

    /// An edit to the room, made on the list it last sent; its answer (the new list, or a
    /// refusal that puts the client's list back) comes with its id.
    private mutating func requestEdit(_ edit: PlaylistEdit, in playlist: PlaylistState) -> [Action] {
        nextRequestID += 1
        pendingEdits.insert(nextRequestID)
        return [.cowatch(.playlistEdit(PlaylistEditRequest(id: nextRequestID, version: playlist.version, current: playlist.current, edit: edit)))]
    }

    /// Lines in the client's chat from the room itself (Syncplay's 150 characters each, cut
    /// between words; one line each, as a line holds one command of a kind).
    static func cowatchSays(_ text: String) -> [Action] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let word = String(word.prefix(150))
            if !line.isEmpty && line.count + 1 + word.count > 150 {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? word : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.prefix(4).map { .syncplay([.chat(SyncplayChat(username: "Cowatch", message: $0))]) }
    }
}
