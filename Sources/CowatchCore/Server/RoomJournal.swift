/// The server's journal bookkeeping (GroupSessionJournal): which attachments each room has,
/// uploads under way or interrupted, transfer connections, and the quotas over all of them.
///
/// Content is addressed by its SHA-256 and stored once however many rooms list it; the shell
/// keeps the bytes (one file per id) and deletes an id when this type says nothing refers to it
/// any more. An upload under way counts its announced size against the quotas, so concurrent
/// uploads cannot overshoot them (and the shell closes one that moves bytes too slowly); an
/// interrupted upload counts only the bytes it received, and keeps them for a resume by the
/// same participant until that participant leaves the room or the room empties. What a name
/// that costs nothing can hold is bounded by what its address may hold (issue 22): bytes and
/// transfers per address, over every room.
///
/// Threading: a value type; one owner (the sequencer).
public struct RoomJournal: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Offer the `journal` feature (`cowatch-server --no-attachments` turns it off). Default on.
        public var enabled = true
        /// The largest attachment, bytes. Default (and most) 100 MiB.
        public var maxAttachmentBytes = Attachment.maxBytes
        /// Bytes one room may hold (attachments and uploads under way). Default 256 MiB.
        public var roomQuotaBytes = 268_435_456
        /// Bytes the server holds for all rooms. Default 1 GiB.
        public var totalQuotaBytes = 1_073_741_824
        /// Attachments (and uploads) one room may have. Default 64.
        public var maxAttachmentsPerRoom = 64
        /// Transfer connections at once, per participant and in total. Defaults 4 and 256.
        public var maxTransfersPerParticipant = 4
        public var maxTransfers = 256
        /// Transfer connections at once from one address (its `AddressIdentity` key). Default 16.
        public var maxTransfersPerAddress = 16
        /// Bytes uploads from one address may hold, over every room (what it stored and what its
        /// uploads reserve). Default 256 MiB: one address cannot fill the server's store.
        public var addressQuotaBytes = 268_435_456

        public init() {}
    }

    public typealias ConnectionID = Int

    struct Upload: Sendable, Equatable {
        var room: String
        var attachment: Attachment
        /// The transfer connection streaming it, nil while interrupted.
        var connection: ConnectionID?
        /// Its uploader's address key.
        var address: String
        /// Bytes received when it was interrupted (what it holds then).
        var received = 0

        /// What it counts against the quotas: its announced size while it streams, what it
        /// received once interrupted.
        var heldBytes: Int { connection == nil ? received : attachment.size }
    }

    struct Transfer: Sendable, Equatable {
        var room: String
        var participant: String
        var id: String
        var kind: TransferRequest.Kind
        var address: String
    }

    public enum UploadStart: Sendable, Equatable {
        /// Receive the bytes: `resume` from what the shell already has of `id` (an interrupted
        /// upload of the same participant), or from nothing (anyone else's partial bytes go).
        case receive(size: Int, resume: Bool)
        /// The content is stored already (another room, or an earlier upload): nothing to send;
        /// `added` is false when this room already listed it.
        case stored(Attachment, added: Bool)
    }

    public let configuration: Configuration
    /// Each room's attachments, in the order added.
    private(set) var lists: [String: [Attachment]] = [:]
    /// Uploads under way or interrupted, by content id.
    private(set) var uploads: [String: Upload] = [:]
    private(set) var transfers: [ConnectionID: Transfer] = [:]
    /// Whose upload stored each content (its address key), while some room lists it.
    private(set) var storedBy: [String: String] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    public func attachments(in room: String) -> [Attachment] { lists[room] ?? [] }

    /// Bytes held for `room`: its attachments and its uploads.
    public func bytes(in room: String) -> Int {
        attachments(in: room).reduce(0) { $0 + $1.size }
            + uploads.values.filter { $0.room == room }.reduce(0) { $0 + $1.heldBytes }
    }

    /// Bytes held in total: each stored content once, and every upload.
    public var totalBytes: Int {
        storedSizes.values.reduce(0, +) + uploads.values.reduce(0) { $0 + $1.heldBytes }
    }

    /// Bytes held because of uploads from `address`: content they stored, and their uploads.
    public func bytes(from address: String) -> Int {
        storedSizes.filter { storedBy[$0.key] == address }.values.reduce(0, +)
            + uploads.values.filter { $0.address == address }.reduce(0) { $0 + $1.heldBytes }
    }

    /// Each stored content's size, once.
    private var storedSizes: [String: Int] {
        var sizes: [String: Int] = [:]
        for list in lists.values { for attachment in list { sizes[attachment.id] = attachment.size } }
        return sizes
    }

    /// True when some room lists `id` (its bytes are complete on disk).
    func isStored(_ id: String) -> Bool { lists.values.contains { $0.contains { $0.id == id } } }

    /// True when nothing refers to `id` any more: its bytes (and partial bytes) can go.
    func isUnreferenced(_ id: String) -> Bool { !isStored(id) && uploads[id] == nil }

    private func transferCount(room: String, participant: String) -> Int {
        transfers.values.filter { $0.room == room && $0.participant == participant }.count
    }

    private func checkTransferSlot(room: String, participant: String, address: String) throws(CowatchError) {
        guard transfers.count < configuration.maxTransfers else {
            throw CowatchError(.serverBusy, "the server has \(configuration.maxTransfers) transfers under way; try again soon")
        }
        guard transfers.values.filter({ $0.address == address }).count < configuration.maxTransfersPerAddress else {
            throw CowatchError(.rateLimited, "\(configuration.maxTransfersPerAddress) transfers from your address are under way; wait for one")
        }
        guard transferCount(room: room, participant: participant) < configuration.maxTransfersPerParticipant else {
            throw CowatchError(.rateLimited, "\(configuration.maxTransfersPerParticipant) transfers of yours are under way; wait for one")
        }
    }

    /// Checks that `size` more bytes fit the limits for `room`.
    private func checkQuota(room: String, size: Int, newContent: Bool, address: String) throws(CowatchError) {
        guard size <= configuration.maxAttachmentBytes else {
            throw CowatchError(.tooLarge, "attachments are at most \(Self.megabytes(configuration.maxAttachmentBytes)) on this server; this one is \(Self.megabytes(size))")
        }
        let count = attachments(in: room).count + uploads.values.filter { $0.room == room }.count
        guard count < configuration.maxAttachmentsPerRoom else {
            throw CowatchError(.quotaExceeded, "room \(room) has \(configuration.maxAttachmentsPerRoom) attachments already; detach one first")
        }
        guard bytes(in: room) + size <= configuration.roomQuotaBytes else {
            throw CowatchError(.quotaExceeded, "room \(room) would hold more than its quota of \(Self.megabytes(configuration.roomQuotaBytes)) (it holds \(Self.megabytes(bytes(in: room)))); detach something first")
        }
        guard !newContent || bytes(from: address) + size <= configuration.addressQuotaBytes else {
            throw CowatchError(.quotaExceeded, "uploads from your address hold \(Self.megabytes(bytes(from: address))) on this server, and may hold \(Self.megabytes(configuration.addressQuotaBytes)); detach something first")
        }
        guard !newContent || totalBytes + size <= configuration.totalQuotaBytes else {
            throw CowatchError(.quotaExceeded, "the server's attachment store is full (quota \(Self.megabytes(configuration.totalQuotaBytes))); try later")
        }
    }

    /// A size as flags give it: bytes, or a number with K, M or G (binary: 1M = 1 MiB); nil when
    /// it is not one, or is beyond 1 TiB.
    public static func parseSize(_ text: String) -> Int? {
        let units: [Character: Double] = ["K": 1024, "M": 1_048_576, "G": 1_073_741_824]
        var number = Substring(text.uppercased())
        var unit = 1.0
        if number.hasSuffix("IB") { number = number.dropLast(2) } else if number.hasSuffix("B") { number = number.dropLast() }
        if let last = number.last, let scale = units[last] {
            unit = scale
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * unit <= 1_099_511_627_776 else { return nil }
        return Int(value * unit)
    }

    static func megabytes(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + 524_288) / 1_048_576
        return "\(tenths / 10).\(tenths % 10) MiB"
    }

    /// An upload of `attachment` into `room` on `connection`, from `address` (its key). Throws
    /// `too-large`, `quota-exceeded`, `server-busy` (the same content is being uploaded right
    /// now, or too many transfers) or `rate-limited` (too many of this participant's or address's).
    public mutating func beginUpload(
        _ attachment: Attachment, room: String, address: String, on connection: ConnectionID
    ) throws(CowatchError) -> UploadStart {
        if let listed = attachments(in: room).first(where: { $0.id == attachment.id }) {
            return .stored(listed, added: false)
        }
        if let stored = lists.values.lazy.flatMap({ $0 }).first(where: { $0.id == attachment.id }) {
            // Stored for another room: this room lists it too, under its new name and adder.
            try checkQuota(room: room, size: stored.size, newContent: false, address: address)
            var added = attachment
            added.size = stored.size
            lists[room, default: []].append(added)
            return .stored(added, added: true)
        }
        if let upload = uploads[attachment.id], upload.connection != nil {
            throw CowatchError(.serverBusy, "the same file is being uploaded right now; try again when it is done")
        }
        try checkTransferSlot(room: room, participant: attachment.from, address: address)
        // An interrupted upload of the same content gives its place to this one; its bytes only
        // to the same participant (someone else's partial bytes could be anything).
        let previous = uploads.removeValue(forKey: attachment.id)
        do {
            try checkQuota(room: room, size: attachment.size, newContent: true, address: address)
        } catch {
            uploads[attachment.id] = previous
            throw error
        }
        let resume = previous.map { $0.room == room && $0.attachment.from == attachment.from && $0.attachment.size == attachment.size } ?? false
        uploads[attachment.id] = Upload(room: room, attachment: attachment, connection: connection, address: address)
        transfers[connection] = Transfer(room: room, participant: attachment.from, id: attachment.id, kind: .upload, address: address)
        return .receive(size: attachment.size, resume: resume)
    }

    /// A download of attachment `id` of `room` from byte `offset`. Throws `not-found`,
    /// `invalid-argument` (offset past the end), `server-busy` or `rate-limited`.
    public mutating func beginDownload(
        _ id: String, offset: Int, room: String, participant: String, address: String, on connection: ConnectionID
    ) throws(CowatchError) -> Attachment {
        guard let attachment = attachments(in: room).first(where: { $0.id == id }) else {
            throw CowatchError(.notFound, "room \(room) has no attachment \(id.prefix(12))…")
        }
        guard offset <= attachment.size else {
            throw CowatchError(.invalidArgument, "offset \(offset) is past the end (\(attachment.size) bytes)")
        }
        try checkTransferSlot(room: room, participant: participant, address: address)
        transfers[connection] = Transfer(room: room, participant: participant, id: id, kind: .download, address: address)
        return attachment
    }

    /// The upload on `connection` arrived whole and verified: it joins its room's list (if the
    /// room is still there). Returns the room and the attachment, or nil when there is nothing to
    /// add (then `isUnreferenced` says whether the bytes can go).
    public mutating func uploadCompleted(on connection: ConnectionID, roomAlive: Bool) -> (room: String, attachment: Attachment)? {
        guard let transfer = transfers.removeValue(forKey: connection), transfer.kind == .upload,
            let upload = uploads[transfer.id], upload.connection == connection
        else { return nil }
        uploads[transfer.id] = nil
        guard roomAlive else { return nil }
        lists[upload.room, default: []].append(upload.attachment)
        storedBy[upload.attachment.id] = upload.address
        return (upload.room, upload.attachment)
    }

    /// The upload on `connection` failed its check: it is forgotten (its bytes can go). Returns its id.
    public mutating func uploadRejected(on connection: ConnectionID) -> String? {
        guard let transfer = transfers.removeValue(forKey: connection), transfer.kind == .upload else { return nil }
        if uploads[transfer.id]?.connection == connection { uploads[transfer.id] = nil }
        return transfer.id
    }

    /// The upload on `connection` stopped after `received` bytes (its peer went away or
    /// stalled): it waits to be resumed, holding what it received.
    public mutating func uploadInterrupted(on connection: ConnectionID, received: Int) {
        guard let transfer = transfers[connection], transfer.kind == .upload, var upload = uploads[transfer.id],
            upload.connection == connection
        else { return }
        upload.received = max(0, min(received, upload.attachment.size))
        upload.connection = nil
        uploads[transfer.id] = upload
    }

    /// A transfer connection ended: its slot is free; an unfinished upload waits to be resumed.
    /// Returns the id whose bytes can go, when the upload was given up meanwhile (its
    /// participant left).
    public mutating func transferEnded(_ connection: ConnectionID) -> String? {
        guard let transfer = transfers.removeValue(forKey: connection) else { return nil }
        if transfer.kind == .upload, uploads[transfer.id]?.connection == connection {
            uploads[transfer.id]?.connection = nil
        }
        return transfer.kind == .upload && isUnreferenced(transfer.id) ? transfer.id : nil
    }

    /// `name` left `room`: its uploads there are given up — an interrupted one's bytes go at
    /// once, one under way is closed (its bytes go when it ends). Returns both.
    public mutating func participantLeft(_ name: String, room: String) -> (close: [ConnectionID], delete: [String]) {
        var close: [ConnectionID] = []
        var delete: [String] = []
        for (id, upload) in uploads where upload.room == room && upload.attachment.from == name {
            uploads[id] = nil
            if let connection = upload.connection { close.append(connection) } else if isUnreferenced(id) { delete.append(id) }
        }
        return (close.sorted(), delete.sorted())
    }

    /// True when `connection` is a transfer connection.
    public func isTransfer(_ connection: ConnectionID) -> Bool { transfers[connection] != nil }

    /// Removes attachment `id` from `room`. Returns it, or nil when the room has no such one.
    public mutating func remove(_ id: String, from room: String) -> Attachment? {
        guard let index = lists[room]?.firstIndex(where: { $0.id == id }) else { return nil }
        let removed = lists[room]!.remove(at: index)
        if lists[room]!.isEmpty { lists[room] = nil }
        if !isStored(id) { storedBy[id] = nil }
        return removed
    }

    /// `room` emptied: its attachments and interrupted uploads go. Returns the ids nothing
    /// refers to any more (uploads still streaming are dropped when they finish).
    public mutating func roomEmptied(_ room: String) -> [String] {
        var candidates = Set((lists.removeValue(forKey: room) ?? []).map(\.id))
        for (id, upload) in uploads where upload.room == room && upload.connection == nil {
            uploads[id] = nil
            candidates.insert(id)
        }
        for id in candidates where !isStored(id) { storedBy[id] = nil }
        return candidates.filter(isUnreferenced).sorted()
    }
}
