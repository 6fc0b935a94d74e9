import CowatchCore
import CowatchNet
import Foundation

/// What the daemon knows of the room's journal.
struct DaemonJournal {
    /// The room's attachments, in the order the server announced them.
    var attachments: [Attachment] = []
    /// Subtitle attachments already added to the player (by id): added once per daemon.
    var subtitlesAdded: Set<String> = []
    /// Where fetched subtitles are kept (a private temporary directory, made on first use).
    var cacheDirectory: String?
    /// The file each subtitle attachment was added to the player from (by id), to remove its
    /// track when the attachment is detached.
    var subtitleFiles: [String: String] = [:]
}

/// The journal (GroupSessionJournal) on the daemon's side: `attach`, `get_attachments`, `detach`,
/// `fetch`, the `attachment-*` events, and subtitles added to the player.
///
/// Transfers run off the actor, on connections of their own (`TransferClient`), so a 100 MB
/// file never holds up the room's clock loop; a dropped transfer is resumed (`resumeAttempts`).
///
/// Threading: actor-isolated to `RoomSession`, except the `nonisolated` transfer methods.
extension RoomSession {
    /// Subtitle attachments larger than this are listed but not fetched by themselves.
    static let maxSubtitleBytes = 16 * 1_048_576
    /// Transfer attempts on a broken link before giving up (each resumes where the last stopped).
    static let resumeAttempts = 5

    // MARK: Announcements

    func attachmentAdded(_ attachment: Attachment, history: Bool) {
        if !journal.attachments.contains(where: { $0.id == attachment.id }) { journal.attachments.append(attachment) }
        events.publish(.attachmentAdded(attachment, history: history))
        if !history {
            showOnScreen("\(attachment.from) shared \(attachment.name) (\(Self.sizeText(attachment.size)))")
        }
        // Subtitles for a playlist entry wait for it (`queueEntrySubtitles`).
        if attachment.subtitlesEntry == nil || attachment.subtitlesEntry == playingEntry { queueSubtitles(attachment) }
    }

    /// Hands subtitles to `runSubtitleFetches`, once (until the player's media changes).
    private func queueSubtitles(_ attachment: Attachment) {
        guard attachment.isSubtitles, configuration.autoSubtitles, !journal.subtitlesAdded.contains(attachment.id),
            attachment.size <= Self.maxSubtitleBytes
        else { return }
        journal.subtitlesAdded.insert(attachment.id)
        subtitleQueue.continuation.yield(attachment)
    }

    /// The playlist entry this player plays now (it has loaded it): nil when the room has no
    /// list, plays something else, or this player stands aside or is still loading.
    var playingEntry: PlaylistEntry.ID? {
        guard playerSide.media.hasRoomMedia else { return nil }
        return coordinator.playlist?.entry(forActivity: coordinator.activity.id)?.id
    }

    /// The player took new media (mpv forgot the tracks it added for the last), or the list
    /// arrived: the subtitles for the entry it plays now are added (from the cache when they
    /// were fetched before: an entry that plays again costs no transfer).
    func queueEntrySubtitles(mediaChanged: Bool) {
        if mediaChanged {
            for attachment in journal.attachments where attachment.subtitlesEntry != nil {
                journal.subtitlesAdded.remove(attachment.id)
                journal.subtitleFiles.removeValue(forKey: attachment.id)
            }
        }
        guard let entry = playingEntry else { return }
        for attachment in journal.attachments where attachment.subtitlesEntry == entry { queueSubtitles(attachment) }
    }

    func attachmentRemoved(_ id: String, by: String) {
        let removed = journal.attachments.first { $0.id == id }
        journal.attachments.removeAll { $0.id == id }
        events.publish(.attachmentRemoved(AttachmentRemoval(id: id, participant: by, name: removed?.name)))
        if let removed { showOnScreen("\(by) removed \(removed.name)") }
        if let file = journal.subtitleFiles.removeValue(forKey: id) { removeSubtitles(file) }
        journal.subtitlesAdded.remove(id)
    }

    /// Removes the subtitle track added from `file` (detached for everyone).
    private func removeSubtitles(_ file: String) {
        subtitles.remove(file: file)
        try? FileManager.default.removeItem(atPath: file)
    }

    static func sizeText(_ bytes: Int) -> String {
        bytes < 1_048_576 ? "\((bytes + 1023) / 1024) KiB" : String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    // MARK: Requests

    /// `get_attachments`: the room's attachments, oldest first.
    func attachmentsReply() -> AttachmentsReply {
        AttachmentsReply(attachments: journal.attachments)
    }

    /// `detach`: removes an attachment for everyone; returns once the server did.
    /// Errors: `not-in-room`, `unsupported`, `not-found`, `invalid-argument` (an ambiguous
    /// prefix), `not-permitted`, `timeout`.
    func detach(_ prefix: String, timeout: Double) async throws(CowatchError) -> AttachmentReply {
        guard isJoined else { throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))") }
        let attachment = try resolve(prefix)
        let request = try coordinator.detach(attachment.id, now: clock.now())
        try await awaitAnswer(
            request.id, kind: .action, sending: request.actions, timeout: timeout,
            timedOut: CowatchError(.timeout, "the room server did not answer in time"))
        return AttachmentReply(attachment)
    }

    /// The attachment whose id starts with `prefix`. Errors: `not-found`, `invalid-argument`.
    func resolve(_ prefix: String) throws(CowatchError) -> Attachment {
        let matches = journal.attachments.filter { $0.id.hasPrefix(prefix) }
        guard let first = matches.first else {
            throw CowatchError(.notFound, "no attachment \(prefix) in the room (cowatch attachments lists them)")
        }
        guard matches.count == 1 else {
            throw CowatchError(.invalidArgument, "\(prefix) names \(matches.count) attachments; give more digits")
        }
        return first
    }

    /// Where and as whom to transfer, for this session. Errors: `not-in-room`, `unsupported`.
    func transferEndpoint() throws(CowatchError) -> TransferClient.Endpoint {
        try sideConnectionEndpoint(
            needing: WireFeature.journal, orElse: "the room server keeps no attachments (it runs with --no-attachments, or is older)",
            rate: configuration.transferRate)
    }

    /// Where and as whom to open a connection of its own beside the room's (a transfer, a
    /// stream): the server this session is joined to (in a cluster, the one that hosts the
    /// room), under the room connection's TLS pin, proved by its session token. Errors:
    /// `not-in-room`, `unsupported` (with `orElse`) when the room connection lacks `feature`.
    func sideConnectionEndpoint(needing feature: String, orElse missing: String, rate: Double = 0) throws(CowatchError)
        -> TransferClient.Endpoint
    {
        guard isJoined, let token = coordinator.token else {
            throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))")
        }
        guard coordinator.features.contains(feature) else { throw CowatchError(.unsupported, missing) }
        let security: RoomConnection.Security = room.tls
            ? .tls(expected: CertificateFingerprint(text: link?.fingerprint ?? "") ?? room.fingerprint, knownHosts: nil) : .plaintext
        return TransferClient.Endpoint(
            host: route.target.host, port: route.target.port, security: security, room: room.room, name: configuration.name,
            token: token, rate: rate)
    }

    /// `attach`: hashes and uploads the file at `path`; returns the attachment once the server
    /// has stored and announced it.
    /// Errors: `not-in-room`, `unsupported`, `not-found` (no such file), `too-large`,
    /// `quota-exceeded`, `hash-mismatch` (the file changed while sent), `io-error`, …
    /// `entry`: subtitles for playlist entry #`entry` (`invalid-argument` when the list has no
    /// such entry, or the file is not SRT, ASS/SSA or WebVTT by its content).
    nonisolated func attach(path: String, name: String?, meta: JSONValue?, entry: Int? = nil) async throws(CowatchError) -> AttachmentReply {
        // A regular file only: a FIFO or a device would block or never end.
        guard let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType,
            type == .typeRegular
        else {
            throw CowatchError(.notFound, "no file \(path)")
        }
        var meta = meta
        if let entry {
            meta = Attachment.entrySubtitlesMeta(try await playlistEntryID(entry), adding: meta)
            try Self.checkSubtitlesContent(path)
        }
        guard let fileName = name ?? AttachmentName.sanitised((path as NSString).lastPathComponent) else {
            throw CowatchError(.invalidArgument, "cannot make a file name of \(path); give one with --name")
        }
        _ = try await transferEndpoint()  // fail fast before reading 100 MB
        let (id, size) = try await TransferClient.hash(path: path)
        guard size <= Attachment.maxBytes else {
            throw CowatchError(.tooLarge, "attachments are at most 100 MiB; \(fileName) is \(Self.sizeText(size))")
        }
        let progress = ProgressReporter(events: events, id: id, name: fileName, direction: .upload, total: size, clock: clock)
        do {
            let attachment = try await withResume { () async throws(CowatchError) -> Attachment in
                try await TransferClient.upload(
                    path: path, id: id, size: size, name: fileName, meta: meta, to: try await self.transferEndpoint(),
                    progress: progress.report)
            }
            progress.finished()
            return AttachmentReply(attachment)
        } catch {
            progress.failed(error)
            throw error
        }
    }

    /// `fetch`: downloads attachment `prefix` to `path` (a directory gets its name), resuming
    /// what an earlier attempt to the same place left in our private partial directory
    /// (`PartialDownloads`, never beside the target); returns where it is. A file already there
    /// is replaced only when `replacing` (`already-exists` otherwise): a name a stranger chose
    /// must never overwrite someone's notes. Errors: `unsafe-path` for a partial directory
    /// that is not private; the transfer's (`TransferClient`).
    nonisolated func fetch(_ prefix: String, to path: String, replacing: Bool = false) async throws(CowatchError) -> FetchReply {
        // An attachment just added elsewhere may still be on its way here: wait for it a moment.
        var attachment: Attachment
        let deadline = clock.now() + 3
        while true {
            do {
                attachment = try await resolve(prefix)
                break
            } catch {
                guard error.code == .notFound, clock.now() < deadline else { throw error }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        var isDirectory: ObjCBool = false
        let target = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            ? path + "/" + attachment.name : path
        var info = stat()
        if !replacing, lstat(target, &info) == 0 {
            throw CowatchError(.alreadyExists, "\(target) already exists; cowatch fetch --force replaces it")
        }
        let resumedFrom = try await download(attachment, to: target, replacing: replacing)
        return FetchReply(attachment: attachment, path: target, resumedFrom: resumedFrom)
    }

    /// Downloads with progress events and resumes, through a partial file in the private
    /// partial directory (pruned first: `PartialDownloads.prune`); returns the byte the
    /// successful attempt started from (above 0 when it resumed an interrupted one).
    nonisolated func download(_ attachment: Attachment, to target: String, replacing: Bool = false) async throws(CowatchError) -> Int {
        let progress = ProgressReporter(
            events: events, id: attachment.id, name: attachment.name, direction: .download, total: attachment.size, clock: clock)
        do {
            let directory = try PartialDownloads.directory(environment: ProcessInfo.processInfo.environment)
            let partial = directory + "/" + PartialDownloads.fileName(id: attachment.id, target: target)
            PartialDownloads.prune(directory, keeping: partial)
            let start = try await withResume { () async throws(CowatchError) -> Int in
                let start = try await TransferClient.download(
                    attachment, to: target, partial: partial, from: try await self.transferEndpoint(), replacing: replacing,
                    progress: progress.report)
                progress.resumed(from: start)
                return start
            }
            progress.finished()
            return start
        } catch {
            progress.failed(error)
            throw error
        }
    }

    /// Runs `body` again after a broken link (`io-error`), up to `resumeAttempts` times, backing
    /// off; every other error ends it at once.
    nonisolated func withResume<T: Sendable>(_ body: () async throws(CowatchError) -> T) async throws(CowatchError) -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch {
                attempt += 1
                guard error.code == .ioError, attempt < Self.resumeAttempts, !Task.isCancelled else { throw error }
                try? await Task.sleep(for: .milliseconds(250 * attempt))
            }
        }
    }

    // MARK: Subtitles

    /// Fetches subtitle attachments as they are announced and adds them to the player, until
    /// cancelled (the daemon's end). Failures are error events; the room carries on.
    nonisolated func runSubtitleFetches() async {
        for await attachment in subtitleQueue.stream {
            do {
                let directory = try await subtitleDirectory()
                // Our own names: a peer's file name (x.edl, x.m3u) never reaches the player.
                let fetched = directory + "/" + attachment.id.prefix(16) + ".fetched"
                if !FileManager.default.fileExists(atPath: fetched) { _ = try await download(attachment, to: fetched) }
                let target = try Self.checkedSubtitles(fetched)
                try await addSubtitles(target, attachment)
            } catch {
                await publishError(CowatchError(error.code, "subtitles \(attachment.name): \(error.message)"))
                await forgetSubtitles(attachment.id)
            }
        }
        if let directory = await journal.cacheDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private func forgetSubtitles(_ id: String) { journal.subtitlesAdded.remove(id) }

    /// The id of playlist entry #`number` as the list stands. Errors: `invalid-argument`.
    private func playlistEntryID(_ number: Int) throws(CowatchError) -> PlaylistEntry.ID {
        try PlaylistCommand.entry(number, in: coordinator.playlist ?? PlaylistState()).id
    }

    /// Errors: `invalid-argument` when the file at `path` is not SRT, ASS/SSA or WebVTT by its content.
    nonisolated static func checkSubtitlesContent(_ path: String) throws(CowatchError) {
        guard subtitleFormat(ofFileAt: path) != nil else {
            throw CowatchError(.invalidArgument, "\(path) is not SRT, ASS/SSA or WebVTT subtitles: only subtitles are attached to an entry")
        }
    }

    /// The fetched file, if it is SRT, ASS/SSA or WebVTT by its content, under its format's
    /// extension (see `SubtitleContent`). Errors: `unsupported` for anything else (an EDL file,
    /// a playlist…), which is removed and never shown to the player.
    nonisolated static func checkedSubtitles(_ fetched: String) throws(CowatchError) -> String {
        guard let format = subtitleFormat(ofFileAt: fetched) else {
            try? FileManager.default.removeItem(atPath: fetched)
            throw CowatchError(.unsupported, "not SRT, ASS/SSA or WebVTT subtitles: not given to the player")
        }
        let target = String(fetched.dropLast(".fetched".count)) + "." + format.fileExtension
        if !FileManager.default.fileExists(atPath: target) {
            do {
                try FileManager.default.copyItem(atPath: fetched, toPath: target)
            } catch {
                throw CowatchError(.ioError, "cannot keep the subtitles: \(error)")
            }
        }
        return target
    }

    /// The subtitle format of the file at `path` by its first bytes; nil for anything else.
    nonisolated static func subtitleFormat(ofFileAt path: String) -> SubtitleContent.Format? {
        var head: [UInt8] = []
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8](handle.readData(ofLength: SubtitleContent.headBytes))
            try? handle.close()
        }
        return SubtitleContent.format(of: head)
    }

    private func subtitleDirectory() throws(CowatchError) -> String {
        if let directory = journal.cacheDirectory { return directory }
        var template = Array((NSTemporaryDirectory() + "cowatchd-subtitles-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CowatchError(.ioError, "cannot make a directory for subtitles: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        journal.cacheDirectory = directory
        return directory
    }

    /// `sub-add`: selected, unless the person chose another subtitle track (one not from the room).
    /// Subtitles for a playlist entry that no longer plays here (the room moved on while they
    /// were fetched) are not added; the entry's next turn adds them.
    private func addSubtitles(_ path: String, _ attachment: Attachment) throws(CowatchError) {
        if let entry = attachment.subtitlesEntry, entry != playingEntry {
            journal.subtitlesAdded.remove(attachment.id)
            return
        }
        let current = subtitles.selected
        let ours = current.file.map { file in journal.cacheDirectory.map { file.hasPrefix($0) } ?? false } ?? false
        let select = !current.any || ours
        do {
            try subtitles.add(path, title: attachment.name, select: select)
        } catch {
            throw CowatchError(.playerError, "mpv refused the subtitles: \(error)")
        }
        journal.subtitleFiles[attachment.id] = path
        logger.debug("subtitles added", metadata: ["cowatch.journal.name": "\(attachment.name)", "cowatch.journal.selected": "\(select)"])
    }
}

/// Publishes `attachment-progress` events for one transfer: at most every 0.25 s while it runs,
/// and once when it ends.
///
/// Threading: any thread (called from the transfer's task).
final class ProgressReporter: Sendable {
    private struct State {
        var lastAt = -Double.infinity
        var resumedFrom = 0
        var done = 0
    }
    private let events: EventHub
    private let id: String
    private let name: String
    private let direction: TransferProgress.Direction
    private let total: Int
    private let clock: any MonotonicClock
    private let state = Locked(State())

    init(events: EventHub, id: String, name: String, direction: TransferProgress.Direction, total: Int, clock: any MonotonicClock) {
        self.clock = clock
        self.events = events
        self.id = id
        self.name = name
        self.direction = direction
        self.total = total
    }

    var report: TransferClient.Progress {
        { [self] done, _ in
            let now = clock.now()
            let due = state.withLock { state -> Bool in
                state.done = done
                guard now - state.lastAt >= 0.25 else { return false }
                state.lastAt = now
                return true
            }
            if due { publish(.running, done: done) }
        }
    }

    func resumed(from offset: Int) { state.withLock { $0.resumedFrom = offset } }
    func finished() { publish(.done, done: total) }

    func failed(_ error: CowatchError) {
        publish(.failed(error), done: state.withLock { $0.done })
    }

    private func publish(_ stage: TransferProgress.Stage, done: Int) {
        events.publish(.attachmentProgress(TransferProgress(
            id: id, name: name, direction: direction, done: done, total: total,
            resumedFrom: state.withLock { $0.resumedFrom }, stage: stage)))
    }
}
