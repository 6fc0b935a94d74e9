/// Film streams on the server (issue 25): offers kept per room and told to everyone who speaks
/// `stream`, and the pairing of a receiver's stream connection with its sharer's serving
/// connection, which the shell then relays byte for byte (`Output.relayStream`).
///
/// A stream connection's first line proves who asks with the session token of a room
/// connection in the room now (as a transfer's does); from then on the connection leaves the
/// handshake's admission and is bounded by the stream caps (`StreamBook`). Only the named sharer,
/// still offering that fingerprint, is asked; only that sharer's serving connection is paired.
/// Nothing of the film passes through here, nor is stored: the shell relays with back-pressure.
///
/// Threading: part of `RoomSequencer` (a value type; one owner).
extension RoomSequencer {
    /// `share`: the member offers a file (in a managed room, owners and operators only).
    mutating func share(_ file: MediaIdentity, activity: Int?, from id: ConnectionID, _ membership: Joined, role: Role, managed: Bool) -> [Output] {
        guard membership.features.contains(WireFeature.stream) else { return [.send(id, .unsupported(type: "share"))] }
        guard !managed || role.isPrivileged else {
            return [.send(id, .refused(
                actionID: nil, code: CowatchError.Code.notPermitted.rawValue,
                message: "in a managed room only the owner and operators share files"))]
        }
        do {
            try streams.share(SharedMedia(by: membership.name, file: file, activity: activity), in: membership.room)
        } catch {
            return [.send(id, .refused(actionID: nil, code: error.code.rawValue, message: error.message))]
        }
        return announceShares(in: membership.room)
    }

    /// `unshare`: the member withdraws one offer or all of its own.
    mutating func unshare(_ fingerprint: String?, from id: ConnectionID, _ membership: Joined) -> [Output] {
        guard membership.features.contains(WireFeature.stream) else { return [.send(id, .unsupported(type: "unshare"))] }
        guard streams.unshare(by: membership.name, fingerprint: fingerprint, in: membership.room) else { return [] }
        return announceShares(in: membership.room)
    }

    /// `shares` to everyone in `room` who speaks `stream`.
    func announceShares(in room: String) -> [Output] {
        let offers = streams.offers(in: room)
        return members(of: room, speaking: WireFeature.stream).map { .sendMessage($0.id, .shares(offers), reliable: true) }
    }

    /// The offers a late joiner gets after its welcome (none when the room has none).
    func sharesWelcome(_ id: ConnectionID, room: String) -> [Output] {
        let offers = streams.offers(in: room)
        return offers.isEmpty ? [] : [.sendMessage(id, .shares(offers), reliable: true)]
    }

    /// A member left: its offers go (told to the room), and streams it waited for.
    mutating func sharerLeft(_ name: String, room: String) -> [Output] {
        guard streams.unshare(by: name, fingerprint: nil, in: room), rooms[room] != nil else { return [] }
        return announceShares(in: room)
    }

    /// The first line of a receiver's stream connection.
    mutating func streamRequested(_ request: StreamRequest, from id: ConnectionID, now: Double) -> [Output] {
        let checked = streamConnection(id, room: request.room, name: request.name, token: request.token, now: now)
        guard case .member(let membership) = checked else {
            if case .refused(let outputs) = checked { return outputs }
            return []
        }
        guard let offer = streams.offers(in: request.room).first(where: { $0.by == request.from && $0.file.fingerprint == request.fingerprint }),
            let sharer = rooms[request.room]?.playback.member(named: request.from), joined[sharer] != nil
        else {
            return [.send(id, .error(code: CowatchError.Code.notFound.rawValue, message: "\(request.from) offers no such file now")), .close(id)]
        }
        guard request.from != membership.name else {
            return [.send(id, .error(code: CowatchError.Code.invalidRequest.rawValue, message: "a stream from yourself")), .close(id)]
        }
        guard streams.streams(of: membership.name, in: request.room) < StreamBook.maxStreamsPerReceiver else {
            return [.send(id, .error(code: CowatchError.Code.serverBusy.rawValue, message: "you already have \(StreamBook.maxStreamsPerReceiver) streams")), .close(id)]
        }
        guard streams.served(by: request.from, in: request.room) < StreamBook.maxStreamsPerSharer else {
            return [.send(id, .error(code: CowatchError.Code.serverBusy.rawValue, message: "\(request.from) already serves \(StreamBook.maxStreamsPerSharer) streams")), .close(id)]
        }
        admission.disconnected(id)
        let stream = streams.ask(StreamBook.Pending(
            room: request.room, receiver: membership.name, receiverConnection: id, sharer: request.from,
            fingerprint: request.fingerprint, size: offer.file.size, deadline: now + StreamBook.serveDeadline))
        return [
            .relayStream(id, stream: stream, size: offer.file.size),
            .sendMessage(sharer, .streamWanted(stream: stream, fingerprint: request.fingerprint, for: membership.name), reliable: true),
        ]
    }

    /// The first line of a sharer's serving connection.
    mutating func streamServed(_ serve: StreamServe, from id: ConnectionID, now: Double) -> [Output] {
        let checked = streamConnection(id, room: serve.room, name: serve.name, token: serve.token, now: now)
        guard case .member = checked else {
            if case .refused(let outputs) = checked { return outputs }
            return []
        }
        guard let waiting = streams.serve(serve.stream, by: serve.name, in: serve.room, on: id) else {
            return [.send(id, .error(code: CowatchError.Code.notFound.rawValue, message: "no stream \(serve.stream) waits for you")), .close(id)]
        }
        admission.disconnected(id)
        return [.relayStream(id, stream: serve.stream, size: waiting.size)]
    }

    private enum StreamConnectionCheck {
        case member(Joined)
        case refused([Output])
        /// A wrong token: answered late through the admission, as a wrong secret is.
        case answeredLater
    }

    /// Checks a stream connection's first line: a fresh connection, whose token is that of
    /// `name`'s room connection in `room`, which speaks `stream`.
    private mutating func streamConnection(_ id: ConnectionID, room: String, name: String, token: String, now: Double) -> StreamConnectionCheck {
        guard handshakes[id] == nil, joined[id] == nil, !journal.isTransfer(id), !streams.isStream(id) else {
            return .refused(refuse(id, CowatchError(.protocolViolation, "a stream line is the first line of a connection of its own"), now: now))
        }
        if let lockout = admission.authLockout(of: id, room: room, name: name, now: now) {
            return .refused(refuse(id, lockout, now: now))
        }
        guard tokens.verify(token, room: room, name: name), let member = rooms[room]?.playback.member(named: name),
            let membership = joined[member], RoomSecret.matches(membership.token, token)
        else {
            admission.authFailed(
                id, room: room, name: name,
                error: CowatchError(.authFailed, "a stream needs the session token of a participant in the room"), now: now)
            return .answeredLater
        }
        guard membership.features.contains(WireFeature.stream) else {
            return .refused(refuse(id, CowatchError(.unsupported, "streams were not negotiated on the room connection"), now: now))
        }
        return .member(membership)
    }

    /// Streams whose sharer did not come in time: their receivers are told and closed.
    mutating func expireStreams(now: Double) -> [Output] {
        streams.expired(now: now).flatMap { connection, waiting in
            [
                Output.send(connection, .error(code: CowatchError.Code.timeout.rawValue, message: "\(waiting.sharer) did not serve the stream in time")),
                .close(connection),
            ]
        }
    }
}
