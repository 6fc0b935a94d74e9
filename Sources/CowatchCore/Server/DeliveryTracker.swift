extension RoomSequencer {
    /// What a reliable message's acknowledgement waits for: its copies, written to each recipient.
    ///
    /// The server answers a reliable message with `message_ack` only once every recipient's copy
    /// has left in a completed write, and names just those it reached. Acknowledging on relay would
    /// lose a message when the server stops between the two writes: the sender, acknowledged, would
    /// not send it again after the reconnect, and the receiver never had it.
    public struct DeliveryReceipt: Sendable, Equatable {
        public var sender: ConnectionID
        public var messageID: Int
        /// The recipients' connections and names, in the order the room lists them.
        public var recipients: [(id: ConnectionID, name: String)]

        public init(sender: ConnectionID, messageID: Int, recipients: [(id: ConnectionID, name: String)]) {
            self.sender = sender
            self.messageID = messageID
            self.recipients = recipients
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.sender == rhs.sender && lhs.messageID == rhs.messageID
                && lhs.recipients.map(\.id) == rhs.recipients.map(\.id) && lhs.recipients.map(\.name) == rhs.recipients.map(\.name)
        }
    }

    /// The server's reliable messages awaiting their recipients' writes (see `DeliveryReceipt`).
    ///
    /// The shell queues a marker (the returned token) behind each recipient's copy; when a write
    /// that carried the marker completes it reports `written`, and a connection that ends reports
    /// `ended` (its pending copies count as not delivered; its own receipts are dropped). Bounded:
    /// at most `limit` receipts wait; past it the oldest is acknowledged with what it reached so far.
    ///
    /// Threading: a value type; one owner (the server's hub).
    public struct DeliveryTracker: Sendable {
        struct Pending: Sendable {
            var sender: ConnectionID
            var messageID: Int
            /// Recipients in the room's order, to name the delivered ones in that order.
            var recipients: [(id: ConnectionID, name: String)]
            var waiting: Set<ConnectionID>
            var delivered: Set<ConnectionID> = []
        }

        /// Receipts waiting at once at most.
        public static let limit = 65_536

        private var pending: [Int: Pending] = [:]
        private var nextToken = 0

        public init() {}

        /// Receipts still waiting (for tests and statistics).
        public var count: Int { pending.count }

        /// Starts waiting for `receipt`. Returns the token to queue behind each recipient's copy, and
        /// the acknowledgements that are due now (this one when it has no recipients; the oldest one
        /// when the tracker is full).
        public mutating func expect(_ receipt: DeliveryReceipt) -> (token: Int, due: [(ConnectionID, ServerMessage)]) {
            nextToken += 1
            let entry = Pending(
                sender: receipt.sender, messageID: receipt.messageID, recipients: receipt.recipients,
                waiting: Set(receipt.recipients.map(\.id)))
            var due: [(ConnectionID, ServerMessage)] = []
            if pending.count >= Self.limit, let oldest = pending.keys.min(), let entry = pending.removeValue(forKey: oldest) {
                due.append(Self.acknowledgement(entry))
            }
            if entry.waiting.isEmpty {
                due.append(Self.acknowledgement(entry))
            } else {
                pending[nextToken] = entry
            }
            return (nextToken, due)
        }

        /// A write to `connection` that carried the marker `token` completed.
        public mutating func written(_ token: Int, to connection: ConnectionID) -> (ConnectionID, ServerMessage)? {
            guard var entry = pending[token], entry.waiting.remove(connection) != nil else { return nil }
            entry.delivered.insert(connection)
            return settle(token, entry)
        }

        /// `connection` ended: what it had not written is not delivered, and what it sent needs no answer.
        public mutating func ended(_ connection: ConnectionID) -> [(ConnectionID, ServerMessage)] {
            var due: [(ConnectionID, ServerMessage)] = []
            for token in pending.keys.sorted() {
                guard var entry = pending[token] else { continue }
                if entry.sender == connection {
                    pending[token] = nil
                    continue
                }
                guard entry.waiting.remove(connection) != nil else { continue }
                if let ack = settle(token, entry) { due.append(ack) }
            }
            return due
        }

        private mutating func settle(_ token: Int, _ entry: Pending) -> (ConnectionID, ServerMessage)? {
            guard entry.waiting.isEmpty else {
                pending[token] = entry
                return nil
            }
            pending[token] = nil
            return Self.acknowledgement(entry)
        }

        private static func acknowledgement(_ entry: Pending) -> (ConnectionID, ServerMessage) {
            let names = entry.recipients.filter { entry.delivered.contains($0.id) }.map(\.name)
            return (entry.sender, .messageAck(id: entry.messageID, delivered: names))
        }
    }
}
