import CowatchCore
import CowatchNet
import Foundation

/// Film streams in the daemon (issue 25).
///
/// Receiving: when the room plays media this daemon lacks (a playlist entry none of its files
/// is, or the room's first media when it came without any), and a member offers that file, the
/// player opens it from the loopback HTTP server, which reads it from the sharer through the
/// room server (`StreamReceiver`); the group's usual waits cover a player that is buffering.
/// When the sharer withdraws it or leaves, the player stands aside, saying why.
///
/// Sharing: `share` offers a file under its identity (never its path); a `stream_wanted` from the
/// server is served by `FilmSharing` on a connection of its own.
///
/// Threading: actor-isolated to `RoomSession`; hashing runs on a low-priority thread.
extension RoomSession {
    // MARK: Receiving

    /// What this daemon lacks of `activity` (the name to show), or nil when it has its own copy
    /// or the activity is no file (a URL). `differs`: we have a copy of the room's first media,
    /// but the room said it differs from the room's and a member whose copy does not differ
    /// offers it (`--accept-stream yes`): we play that instead.
    func lackedMedia(for activity: Activity) -> (name: String, entry: MediaIdentity?, differs: Bool)? {
        if let entry = coordinator.playlist?.entry(forActivity: activity.id), case .file(let identity) = entry.media {
            if case .lack(let name) = playlistFile(for: activity) { return (name, identity, false) }
            return nil
        }
        // The room's first media is each one's own: lacked only by a daemon that came without.
        guard activity.id == 0 else { return nil }
        if configuration.media.isEmpty { return (activity.displayTitle, nil, false) }
        if replacementOffer(for: activity) != nil { return (activity.displayTitle, nil, true) }
        return nil
    }

    /// The offer to play instead of our own copy of `activity`'s media, when the room said our
    /// copy differs and we let streams replace it.
    private func replacementOffer(for activity: Activity) -> SharedMedia? {
        guard configuration.streams.replaceDifferingCopy, coordinator.ownCopyDiffers else { return nil }
        return StreamChoice.replacement(
            for: activity.id, among: coordinator.shares, me: configuration.name, differing: coordinator.copiesDiffering,
            own: streams.ownMedia)
    }

    /// The offer to stream `activity`'s media from, when we lack it and accept streams.
    func streamOffer(for activity: Activity) -> SharedMedia? {
        guard configuration.streams.acceptStreams, let lacked = lackedMedia(for: activity) else { return nil }
        if lacked.differs { return replacementOffer(for: activity) }
        return StreamChoice.offer(for: activity.id, entry: lacked.entry, among: coordinator.shares, me: configuration.name)
    }

    /// The room switched to `activity`, which we lack: stream it when someone offers it (true),
    /// else false (the caller stands aside). A stream of another activity stops first.
    func streamIfOffered(_ activity: Activity) -> Bool {
        if let receiving = streams.receiving, receiving.activity != activity.id { stopReceiving() }
        guard let offer = streamOffer(for: activity) else { return false }
        if let receiving = streams.receiving, receiving.offer == offer { return true }
        return startReceiving(offer, for: activity)
    }

    /// The room's offers changed, or the room said our copy differs: start, keep or stop the
    /// stream of the room's media.
    func sharesChanged() {
        let activity = coordinator.activity
        let offer = streamOffer(for: activity)
        if let receiving = streams.receiving {
            guard receiving.activity == activity.id, offer == nil || offer?.file.fingerprint != receiving.offer.file.fingerprint || offer?.by != receiving.offer.by else {
                return
            }
            let name = receiving.offer.file.name
            stopReceiving()
            if let offer {
                _ = startReceiving(offer, for: activity)
            } else if receiving.replacesOwnCopy {
                tellPerson("\(receiving.offer.by) stopped sharing \(name): playing your own copy again")
                backToOwnCopy(activity)
            } else {
                let why = "\(receiving.offer.by) stopped sharing \(name): it cannot play here now"
                publishError(CowatchError(.mediaUnavailable, why))
                tellPerson(why)
                standAsideLacking(activity, name: name, quietly: true)
            }
            return
        }
        guard let offer else { return }
        let differs = lackedMedia(for: activity)?.differs == true
        guard differs || playerSide.media.stoodAside || !playerSide.media.hasRoomMedia else { return }
        _ = startReceiving(offer, for: activity)
    }

    /// The player opens our own `--media` again for `activity` (a stream that replaced it ended).
    private func backToOwnCopy(_ activity: Activity) {
        let now = clock.now()
        carryOut(playerSide.roomSwitched(to: activity, ownCopy: configuration.media, playerHas: media.current, now: now), now: now)
    }

    /// Opens the loopback URL for `offer` as `activity`'s media. False when it cannot (no
    /// loopback server: said).
    private func startReceiving(_ offer: SharedMedia, for activity: Activity) -> Bool {
        guard let loopback = streams.loopback else { return false }
        let endpoint: TransferClient.Endpoint
        do {
            endpoint = try streamEndpoint()
        } catch {
            logger.debug("no stream endpoint", metadata: ["cowatch.stream.error": "\(error)"])
            return false
        }
        let receiver = StreamReceiver(
            endpoint: endpoint, offer: offer, cacheBytes: Self.streamCacheBytes, disk: streamDiskCache(), logger: logger)
        let url = loopback.publish(name: offer.file.name, size: offer.file.size) { offset, length in
            try await receiver.read(offset: offset, length: length)
        }
        let differs = lackedMedia(for: activity)?.differs == true
        streams.receiving = .init(offer: offer, receiver: receiver, url: url, activity: activity.id, replacesOwnCopy: differs)
        streams.toldLacking.remove(activity.id)
        if differs {
            tellPerson(
                "your copy of \(activity.displayTitle) differs from the room's: playing \(offer.file.name) streamed from \(offer.by) "
                    + "instead (cowatchd --accept-stream missing keeps your own)")
        } else {
            tellPerson("you do not have \(offer.file.name): playing it streamed from \(offer.by)")
        }
        let now = clock.now()
        carryOut(playerSide.roomSwitched(to: activity, ownCopy: url, playerHas: media.current, now: now), now: now)
        return true
    }

    /// Where and how much of a stream is kept on disk (`--stream-cache`): a file under the state
    /// directory's `streams`, which the receiver unlinks as soon as it is made. Nil (memory
    /// only) when turned off or when the directory cannot be made (logged).
    private func streamDiskCache() -> StreamReceiver.DiskCache? {
        let bytes = configuration.streams.diskCacheBytes
        guard bytes > 0 else { return nil }
        do {
            let directory = try StatePaths.defaultDirectory(environment: ProcessInfo.processInfo.environment) + "/streams"
            try StatePaths.ensureDirectory(directory)
            return .init(directory: directory, bytes: bytes)
        } catch {
            logger.notice("streams are kept in memory only: \(error.message)")
            return nil
        }
    }

    /// Bytes of a stream kept in memory beside mpv's own cache (`DaemonConfiguration`'s
    /// `demuxer-max-bytes`): room for the reads ahead and a seek back.
    static let streamCacheBytes = 32 << 20

    /// Ends the stream the player plays from (its URL goes; the player is moved on by the caller).
    func stopReceiving() {
        guard let receiving = streams.receiving else { return }
        streams.receiving = nil
        streams.loopback?.withdraw(receiving.url)
        Task { await receiving.receiver.close() }
    }

    /// Stands aside for `activity`, lacking `name` (as for a playlist entry nobody offers);
    /// `quietly`: the caller has said why.
    func standAsideLacking(_ activity: Activity, name: String, quietly: Bool = false) {
        carryOut(playerSide.roomSwitched(to: activity, lacking: name, quietly: quietly), now: clock.now())
    }

    /// The room's first media, which we lack (we came without media): the player waits aside
    /// until a member offers it. The room's offers follow the welcome at once, so that nobody
    /// offers it is said only if none came within a few seconds (once per activity).
    func lackingFirstMedia(_ activity: Activity) {
        standAsideLacking(activity, name: activity.displayTitle, quietly: true)
        guard !streams.toldLacking.contains(activity.id) else { return }
        Task { [weak self, clock] in
            try? await clock.sleep(seconds: Self.offerGrace)
            await self?.sayNobodyShares(activity)
        }
    }

    /// Seconds the room's offers have to arrive before a lacking player says nobody shares.
    static let offerGrace = 3.0

    private func sayNobodyShares(_ activity: Activity) {
        guard coordinator.activity.id == activity.id, streams.receiving == nil,
            streams.toldLacking.insert(activity.id).inserted
        else { return }
        tellPerson("you have no copy of \(activity.displayTitle): it plays here once a member shares it (cowatch share on their side)")
    }

    /// Where and as whom to open stream connections. Errors: `not-in-room`, `unsupported`.
    func streamEndpoint() throws(CowatchError) -> TransferClient.Endpoint {
        try sideConnectionEndpoint(
            needing: WireFeature.stream, orElse: "the room server cannot relay films (an older server, or a Syncplay room)")
    }

    /// Starts the loopback server the player reads streams from (once; only when streams are
    /// accepted). A failure is logged: this daemon then plays only its own copies.
    func startLoopbackIfNeeded() async {
        guard configuration.streams.acceptStreams, streams.loopback == nil else { return }
        do {
            streams.loopback = try await LoopbackMediaServer.start(logger: logger)
        } catch {
            logger.warning("cannot serve streamed media to the player: \(error)")
        }
    }

    /// Every few seconds, the room hears how the stream we play fares (whom from, how far the
    /// buffer reaches: our blocks ahead plus mpv's demuxer cache), and once that we play none
    /// when one ended.
    func reportStreamIfDue(now: Double) {
        guard coordinator.speaksStream, now - streams.reportedAt >= Self.streamReportInterval else { return }
        streams.reportedAt = now
        guard let current = streams.receiving else {
            if streams.reportedStream {
                streams.reportedStream = false
                perform(coordinator.streamStatus(nil))
            }
            return
        }
        let duration = current.offer.file.duration ?? player.duration
        let demuxed = player.cachedAhead
        Task { [weak self] in
            let stats = await current.receiver.stats()
            await self?.reportStream(current, stats: stats, duration: duration, demuxed: demuxed)
        }
    }

    /// Seconds between the reports of our stream to the room.
    static let streamReportInterval = 2.0

    private func reportStream(_ current: DaemonStreams.Receiving, stats: StreamReceiverStats, duration: Double?, demuxed: Double?) {
        guard streams.receiving?.url == current.url else { return }
        let size = current.offer.file.size
        let ours = duration.flatMap { $0 > 0 && size > 0 ? Double(stats.bufferedAhead) * $0 / Double(size) : nil }
        let seconds = ours.map { $0 + (demuxed ?? 0) } ?? demuxed
        streams.reportedStream = true
        perform(coordinator.streamStatus(StreamReport(
            from: current.offer.by, aheadBytes: stats.bufferedAhead, aheadSeconds: seconds, rate: stats.bytesPerSecond)))
    }

    /// The player waits for the stream's bytes: when the stream arrives slower than the film
    /// plays, the person is told so once per stream, with both rates.
    func streamBuffering() {
        guard let current = streams.receiving, !streams.toldSlow.contains(current.url) else { return }
        let duration = current.offer.file.duration ?? player.duration ?? 0
        guard duration > 0 else { return }
        let needed = Double(current.offer.file.size) / duration
        Task { [weak self] in
            let stats = await current.receiver.stats()
            await self?.sayTooSlow(current, rate: stats.bytesPerSecond, needed: needed)
        }
    }

    private func sayTooSlow(_ current: DaemonStreams.Receiving, rate: Double, needed: Double) {
        guard rate > 0, rate < needed * 0.95, streams.receiving?.url == current.url,
            streams.toldSlow.insert(current.url).inserted
        else { return }
        func mbits(_ bytesPerSecond: Double) -> String { String(format: "%.1f Mbit/s", bytesPerSecond * 8 / 1_000_000) }
        tellPerson(
            "the stream of \(current.offer.file.name) from \(current.offer.by) reaches you at \(mbits(rate)); the film needs "
                + "\(mbits(needed)): playback will stop to buffer now and then (the room waits for you)")
    }

    // MARK: Sharing

    /// `share`: offers the file at `path` (nil: what the player plays for the room) to the room.
    /// Errors: `not-in-room`, `unsupported` (an older server), `invalid-argument` (nothing to
    /// share: no local file), `not-found`/`io-error` (the file), the server's refusals later.
    func share(path: String?) async throws(CowatchError) -> SharesReply {
        let file = try sharedPath(path)
        let identity = try await MediaDirectoryIndexer.identity(ofFile: file)
        let activity = coordinator.activity
        let plays = Self.sameFile(file, media.current) ? activity.id : nil
        try offer(identity, path: file, activity: plays)
        // Its subtitles travel with it, through the journal (for its playlist entry when it is one).
        let entry = coordinator.playlist.flatMap { list in
            list.entries.firstIndex { entry in
                if case .file(let listed) = entry.media { return listed.matches(identity) }
                return false
            }.map { $0 + 1 }
        }
        let subtitles = Self.subtitleFiles(besides: file)
        if !subtitles.isEmpty, coordinator.features.contains(WireFeature.journal) {
            Task { [weak self] in await self?.attachSubtitles(subtitles, entry: entry) }
        }
        return await sharesReply()
    }

    /// External subtitle files beside `film` that mpv would load with it: the same name up to
    /// its extension, then anything (`film.en.srt`), ending in .srt, .ass, .ssa or .vtt. At most 8.
    static func subtitleFiles(besides film: String) -> [String] {
        let url = URL(fileURLWithPath: film)
        let stem = url.deletingPathExtension().lastPathComponent
        let folder = url.deletingLastPathComponent().path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        let found = names.filter { name in
            let lowered = name.lowercased()
            return name.hasPrefix(stem + ".") && ["srt", "ass", "ssa", "vtt"].contains { lowered.hasSuffix("." + $0) }
        }
        return found.sorted().prefix(8).map { folder + "/" + $0 }
    }

    /// Attaches each subtitle file (its content checked as subtitles), saying what went.
    private func attachSubtitles(_ paths: [String], entry: Int?) async {
        for path in paths {
            do throws(CowatchError) {
                try Self.checkSubtitlesContent(path)
                let reply = try await attach(path: path, name: nil, meta: nil, entry: entry)
                tellPerson("\(reply.attachment.name) travels with the film (an attachment: every player gets the subtitles)")
            } catch {
                logger.notice("subtitles not attached", metadata: ["cowatch.stream.file": "\(path)", "cowatch.stream.error": "\(error)"])
            }
        }
    }

    /// The file `share` offers: `path`, else our own copy of the room's media.
    private func sharedPath(_ path: String?) throws(CowatchError) -> String {
        if let path {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw CowatchError(.notFound, "no file \(path)")
            }
            return path
        }
        if case .have(let own) = playlistFile(for: coordinator.activity) { return own }
        guard streams.receiving == nil, let own = MediaFingerprint.localPath(of: media.current), !own.isEmpty,
            FileManager.default.fileExists(atPath: own)
        else {
            throw CowatchError(.invalidArgument, "this player plays no local file of its own: name the file to share")
        }
        return own.hasPrefix("/") ? own : FileManager.default.currentDirectoryPath + "/" + own
    }

    /// Offers `identity` (the file at `path`) to the room and keeps it for later welcomes.
    private func offer(_ identity: MediaIdentity, path: String, activity: Int?) throws(CowatchError) {
        let actions = try coordinator.share(identity, activity: activity)
        streams.offered[identity.fingerprint] = .init(identity: identity, path: path, activity: activity)
        let sharing = self.sharing
        Task { await sharing.offer(path: path, identity: identity) }
        perform(actions)
    }

    /// `unshare`: withdraws every file we offer; their streams stop.
    func unshare() async throws(CowatchError) -> SharesReply {
        let actions = try coordinator.unshare(fingerprint: nil)
        streams.offered = [:]
        await sharing.withdraw(fingerprint: nil)
        perform(actions)
        return await sharesReply()
    }

    /// After each welcome: our offers again (the server forgot them with the last connection),
    /// and `--share` the first time.
    func reofferAfterWelcome() {
        guard coordinator.speaksStream else { return }
        for offered in streams.offered.values {
            if let actions = try? coordinator.share(offered.identity, activity: offered.activity) { perform(actions) }
        }
        guard configuration.streams.shareOwnMedia, !streams.sharedOwnMedia else { return }
        streams.sharedOwnMedia = true
        Task { [weak self] in
            guard let self else { return }
            do throws(CowatchError) {
                _ = try await self.share(path: nil)
            } catch {
                await self.tellPerson("--share: \(error.message)")
            }
        }
    }

    /// The server asks us to serve a stream.
    func streamWanted(stream: Int, fingerprint: String, for receiver: String) {
        guard let endpoint = try? streamEndpoint() else { return }
        let sharing = self.sharing
        Task { await sharing.serve(stream: stream, fingerprint: fingerprint, for: receiver, endpoint: endpoint) }
    }

    /// `get_shares`.
    func sharesReply() async -> SharesReply {
        let offers = coordinator.shares.map {
            SharesReply.Offer(by: $0.by, name: $0.file.name, size: $0.file.size, fingerprint: $0.file.fingerprint)
        }
        var receiving: SharesReply.Receiving?
        if let current = streams.receiving {
            let stats = await current.receiver.stats()
            receiving = .init(
                from: current.offer.by, name: current.offer.file.name, received: stats.receivedBytes, rate: stats.bytesPerSecond,
                ahead: stats.bufferedAhead, problem: stats.lastError?.message, onDisk: stats.diskCachedBytes)
        }
        let names = Dictionary(streams.offered.values.map { ($0.identity.fingerprint, $0.identity.name) }, uniquingKeysWith: { a, _ in a })
        let serving = await sharing.status().map {
            SharesReply.Serving(to: $0.receiver, name: names[$0.fingerprint] ?? $0.fingerprint, sent: $0.bytesSent, rate: $0.bytesPerSecond)
        }
        return SharesReply(offers: offers, receiving: receiving, serving: serving)
    }
}
