/// `get_shares`'s reply (and `share`'s, with the offer made): the room's offered films, the
/// stream this daemon plays the room's media from, and the streams it serves. Its `json` and
/// `init(json:)` are its one codec.
///
/// Threading: value types, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct SharesReply: ControlReplyData {
    /// An offered file: who offers it and what it is.
    public struct Offer: Sendable, Hashable {
        public var by: String
        public var name: String
        public var size: Int
        public var fingerprint: String
        public init(by: String, name: String, size: Int, fingerprint: String) {
            self.by = by
            self.name = name
            self.size = size
            self.fingerprint = fingerprint
        }
    }

    /// The stream this daemon plays from.
    public struct Receiving: Sendable, Hashable {
        public var from: String
        public var name: String
        /// Bytes received so far, bytes a second lately, bytes held beyond what the player read.
        public var received: Int
        public var rate: Double
        public var ahead: Int
        /// Why the stream is failing now, when it is.
        public var problem: String?
        /// Bytes of it kept in the disk cache (`--stream-cache`); 0 without one.
        public var onDisk: Int
        public init(from: String, name: String, received: Int, rate: Double, ahead: Int, problem: String? = nil, onDisk: Int = 0) {
            self.from = from
            self.name = name
            self.received = received
            self.rate = rate
            self.ahead = ahead
            self.problem = problem
            self.onDisk = onDisk
        }
    }

    /// A stream this daemon serves.
    public struct Serving: Sendable, Hashable {
        public var to: String
        public var name: String
        public var sent: Int
        public var rate: Double
        public init(to: String, name: String, sent: Int, rate: Double) {
            self.to = to
            self.name = name
            self.sent = sent
            self.rate = rate
        }
    }

    public var offers: [Offer]
    public var receiving: Receiving?
    public var serving: [Serving]

    public init(offers: [Offer] = [], receiving: Receiving? = nil, serving: [Serving] = []) {
        self.offers = offers
        self.receiving = receiving
        self.serving = serving
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "offers": .array(offers.map { offer in
                ["by": .string(offer.by), "name": .string(offer.name), "size": .count(offer.size), "fingerprint": .string(offer.fingerprint)]
            }),
            "serving": .array(serving.map { serving in
                ["to": .string(serving.to), "name": .string(serving.name), "sent": .count(serving.sent), "rate": .number(serving.rate)]
            }),
        ]
        if let receiving {
            var fields: [String: JSONValue] = [
                "from": .string(receiving.from), "name": .string(receiving.name), "received": .count(receiving.received),
                "rate": .number(receiving.rate), "ahead": .count(receiving.ahead), "on_disk": .count(receiving.onDisk),
            ]
            if let problem = receiving.problem { fields["problem"] = .string(problem) }
            object["receiving"] = .object(fields)
        } else {
            object["receiving"] = .null
        }
        return .object(object)
    }

    public init(json: JSONValue) throws(CowatchError) {
        let fields = try ControlFields(json, what: "the get_shares reply")
        offers = try ControlFields.list(fields.value("offers") ?? .null, what: "the offers").map { offer throws(CowatchError) in
            Offer(
                by: try offer.string("by"), name: try offer.string("name"), size: try offer.count("size"),
                fingerprint: try offer.string("fingerprint"))
        }
        serving = try ControlFields.list(fields.value("serving") ?? .null, what: "the streams served").map { serving throws(CowatchError) in
            Serving(to: try serving.string("to"), name: try serving.string("name"), sent: try serving.count("sent"), rate: try serving.number("rate"))
        }
        if let value = fields.value("receiving"), value != .null {
            let receiving = try ControlFields(value, what: "the stream received")
            self.receiving = Receiving(
                from: try receiving.string("from"), name: try receiving.string("name"), received: try receiving.count("received"),
                rate: try receiving.number("rate"), ahead: try receiving.count("ahead"), problem: try receiving.optionalString("problem"),
                onDisk: try receiving.optionalNumber("on_disk").map { Int($0) } ?? 0)
        } else {
            receiving = nil
        }
    }
}
