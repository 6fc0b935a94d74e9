/// How a `seek` target is interpreted, as in mpv's `seek` command.
public enum SeekMode: String, Sendable, Hashable, CaseIterable {
    /// Seconds from the start of the media.
    case absolute
    /// Seconds from the current position (may be negative).
    case relative
}

/// A command of the control protocol, validated.
///
/// Every value here is in range: positions and rates are finite, rates are within mpv's limits,
/// property names are bounded. The wire form is documented in `man/cowatch-protocol.7`.
public enum ControlCommand: Sendable, Hashable {
    case play
    case pause
    case togglePause
    case seek(seconds: Double, mode: SeekMode)
    case speed(Double)
    case getStatus
    case getProperty(String)
    case getParticipants
    /// Stop following the room (the player stays where it is).
    case leave
    /// Follow the room again after `leave` (or after the activity ended).
    case join
    /// End the activity for everyone in the room.
    case end
    /// Switch the activity to new media for everyone.
    case open(OpenRequest)
    /// Readiness (Syncplay's ready / not ready).
    case setReady(Bool)
    /// False: "don't wait for me".
    case setWaitForMe(Bool)
    /// Owner only: make `name` an operator (`op`) or a member again (`deop`).
    case setRole(name: String, role: Role)
    /// Owners and operators: remove `name` from the room.
    case kick(name: String)
    /// Open the media someone switched the room to, offered under `--accept-open ask`.
    case acceptOpen
    /// The invite link to this daemon's room (with its secret and the server's key), naming
    /// `host` as the server's address when given.
    case getInvite(host: String?)
    /// (1.3) A line for the room's chat.
    case chat(String)
    /// (1.3) The room's recent chat as this daemon has it (history included).
    case getChat
    /// (1.3) A messenger message to everyone (`to` nil) or to some.
    case sendMessage(SendMessageRequest)
    /// (1.4) The room line: who is here, who is not ready, whom the group waits for; shown on
    /// the OSD too (`cowatch osd`).
    case showRoom
    /// (1.5) Share the file at `path` (absolute) with the room, as `name`, with `meta`; (1.7)
    /// `entry`: subtitles for playlist entry #`entry` (its number in the list now), added to each
    /// player when that entry plays.
    case attach(path: String, name: String?, meta: JSONValue?, entry: Int? = nil)
    /// (1.5) The room's attachments.
    case getAttachments
    /// (1.5) Remove an attachment for everyone (`id`: its SHA-256, or an unambiguous prefix).
    case detach(String)
    /// (1.5) Download an attachment to `path` (absolute; a directory gets the attachment's name).
    case fetch(id: String, path: String, force: Bool = false)
    /// (1.7) The room's shared playlist as this daemon has it (`PlaylistReply`).
    case getPlaylist
    /// (1.7) An edit of the room's playlist, or this daemon's choice of a file for an entry
    /// (`ControlCommand+Playlist.swift`).
    case playlist(PlaylistCommand)
    /// (1.8) Offer the file at `path` (absolute; nil: what this daemon plays) to the room:
    /// members who lack it stream it from here.
    case share(path: String?)
    /// (1.8) Withdraw every file this daemon offers; its streams stop.
    case unshare
    /// (1.8) The room's offered files, the stream this daemon plays from, and those it serves
    /// (`SharesReply`).
    case getShares
    /// (1.9) In a Syncplay room: make it a managed room this daemon controls, as Syncplay's
    /// "Create managed room" does (`ManagedRoomReply`: its name and password). A Cowatch room
    /// answers `unsupported`: it is managed or not from its start.
    case manage
    case quit

    /// The arguments of `send_message`.
    public struct SendMessageRequest: Sendable, Hashable {
        public var topic: String
        /// Any JSON value; encoded, at most `RoomMessage.maxPayloadBytes`.
        public var payload: JSONValue
        public var to: [String]?
        public var reliable: Bool

        public init(topic: String, payload: JSONValue, to: [String]? = nil, reliable: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.to = to
            self.reliable = reliable
        }
    }

    /// The arguments of `open`.
    public struct OpenRequest: Sendable, Hashable {
        public var url: String
        public var title: String?
        public var type: ActivityType?
        public var fallbackURL: String?

        public init(url: String, title: String? = nil, type: ActivityType? = nil, fallbackURL: String? = nil) {
            self.url = url
            self.title = title
            self.type = type
            self.fallbackURL = fallbackURL
        }
    }

    /// The longest URL, title or fallback accepted by `open`.
    public static let maxURLLength = 4096

    /// The slowest and fastest playback rates accepted (mpv's own limits).
    public static let speedRange: ClosedRange<Double> = 0.01...100
    /// The longest accepted property name.
    public static let maxPropertyNameLength = 128

    /// The name used on the wire.
    public var name: String { kind.rawValue }

    /// The command's name as a `Name`.
    public var kind: Name {
        switch self {
        case .play: .play
        case .pause: .pause
        case .togglePause: .togglePause
        case .seek: .seek
        case .speed: .speed
        case .getStatus: .getStatus
        case .getProperty: .getProperty
        case .getParticipants: .getParticipants
        case .leave: .leave
        case .join: .join
        case .end: .end
        case .open: .open
        case .setReady(let ready): ready ? .ready : .unready
        case .setWaitForMe: .waitForMe
        case .setRole(_, let role): role == .operator ? .op : .deop
        case .kick: .kick
        case .acceptOpen: .acceptOpen
        case .getInvite: .getInvite
        case .chat: .chat
        case .getChat: .getChat
        case .sendMessage: .sendMessage
        case .showRoom: .showRoom
        case .attach: .attach
        case .getAttachments: .getAttachments
        case .detach: .detach
        case .fetch: .fetch
        case .getPlaylist: .getPlaylist
        case .playlist(let command): command.kind
        case .share: .share
        case .unshare: .unshare
        case .getShares: .getShares
        case .manage: .manage
        case .quit: .quit
        }
    }

    /// Every command name the daemon accepts (without the aliases), from `Name`.
    public static let names: [String] = Name.allCases.map(\.rawValue)

    /// The command as the JSON array sent on the wire.
    public var arguments: [JSONValue] {
        switch self {
        case .seek(let seconds, let mode): [.string(name), .number(seconds), .string(mode.rawValue)]
        case .speed(let rate): [.string(name), .number(rate)]
        case .getProperty(let property): [.string(name), .string(property)]
        case .open(let request):
            [
                .string(name), .string(request.url), request.title.map(JSONValue.string) ?? .null,
                request.type.map { .string($0.rawValue) } ?? .null, request.fallbackURL.map(JSONValue.string) ?? .null,
            ]
        case .setWaitForMe(let on): [.string(name), .bool(on)]
        case .setRole(let participant, _), .kick(let participant): [.string(name), .string(participant)]
        case .getInvite(let host?): [.string(name), .string(host)]
        case .chat(let text): [.string(name), .string(text)]
        case .attach(let path, let fileName, let meta, let entry):
            [.string(name), .string(path), fileName.map(JSONValue.string) ?? .null, meta ?? .null]
                + (entry.map { [.number(Double($0))] } ?? [])
        case .detach(let id): [.string(name), .string(id)]
        case .fetch(let id, let path, let force): [.string(name), .string(id), .string(path)] + (force ? [.bool(true)] : [])
        case .sendMessage(let message):
            [
                .string(name), .string(message.topic), message.payload,
                message.to.map { .array($0.map(JSONValue.string)) } ?? .string("all"),
                .string(message.reliable ? "reliable" : "unreliable"),
            ]
        case .playlist(let command): Self.playlistArguments(command)
        case .share(let path?): [.string(name), .string(path)]
        default: [.string(name)]
        }
    }

    /// Validates a JSON command array such as `["seek", 90, "absolute"]`.
    ///
    /// Numbers may also be given as strings (`["seek", "90"]`), as mpv's IPC allows.
    /// Throws `CowatchError` with `invalid-request`, `unknown-command`, `wrong-argument-count`
    /// or `invalid-argument`.
    public init(arguments: [JSONValue]) throws(CowatchError) {
        guard let first = arguments.first else {
            throw CowatchError(.invalidRequest, "the command array is empty")
        }
        guard let name = first.stringValue else {
            throw CowatchError(.invalidRequest, "the first element of command must be the command name, a string")
        }
        let args = Array(arguments.dropFirst())

        func expectCount(_ allowed: ClosedRange<Int>) throws(CowatchError) {
            guard allowed.contains(args.count) else {
                let wanted = allowed.lowerBound == allowed.upperBound
                    ? "\(allowed.lowerBound)" : "\(allowed.lowerBound) to \(allowed.upperBound)"
                throw CowatchError(
                    .wrongArgumentCount, "\(name) takes \(wanted) argument(s), got \(args.count)")
            }
        }

        guard let kind = Name(wireName: name) else {
            let shown = name.count > 40 ? String(name.prefix(40)) + "…" : name
            throw CowatchError(.unknownCommand, "unknown command \"\(shown)\"")
        }
        switch kind {
        case .play: try expectCount(0...0); self = .play
        case .pause: try expectCount(0...0); self = .pause
        case .togglePause: try expectCount(0...0); self = .togglePause
        case .getStatus: try expectCount(0...0); self = .getStatus
        case .getParticipants: try expectCount(0...0); self = .getParticipants
        case .quit: try expectCount(0...0); self = .quit
        case .leave: try expectCount(0...0); self = .leave
        case .join: try expectCount(0...0); self = .join
        case .end: try expectCount(0...0); self = .end
        case .acceptOpen: try expectCount(0...0); self = .acceptOpen
        case .getChat: try expectCount(0...0); self = .getChat
        case .showRoom: try expectCount(0...0); self = .showRoom
        case .getAttachments: try expectCount(0...0); self = .getAttachments
        case .unshare: try expectCount(0...0); self = .unshare
        case .getShares: try expectCount(0...0); self = .getShares
        case .manage: try expectCount(0...0); self = .manage
        case .share:
            try expectCount(0...1)
            self = .share(path: args.isEmpty || args[0] == .null ? nil : try Self.absolutePath(args[0], what: "share"))
        case .getPlaylist, .playlistAdd, .playlistInsert, .playlistReplace, .playlistRemove, .playlistMove, .playlistJump,
            .playlistNext, .playlistPrev, .playlistClear, .playlistUndo, .playlistRepeat, .playlistShuffle, .playlistEditing,
            .playlistCountdown, .playlistPick:
            self = try Self.playlist(kind, args)
        case .attach:
            try expectCount(1...4)
            let path = try Self.absolutePath(args[0], what: "attach")
            var fileName: String?
            if args.count > 1, args[1] != .null {
                guard let given = args[1].stringValue, let safe = AttachmentName.sanitised(given) else {
                    throw CowatchError(.invalidArgument, "the name must be a file name of 1–\(AttachmentName.maxBytes) bytes")
                }
                fileName = safe
            }
            var meta: JSONValue?
            if args.count > 2, args[2] != .null {
                guard args[2].objectValue != nil, args[2].encoded().count <= Attachment.maxMetaBytes else {
                    throw CowatchError(.invalidArgument, "meta must be a JSON object of at most \(Attachment.maxMetaBytes) bytes")
                }
                meta = args[2]
            }
            var entry: Int?
            if args.count > 3, args[3] != .null {
                guard let number = args[3].numberValue, number >= 1, number <= Double(PlaylistState.maxEntries),
                    number.rounded() == number
                else {
                    throw CowatchError(.invalidArgument, "entry must be a playlist entry's number, 1–\(PlaylistState.maxEntries)")
                }
                entry = Int(number)
            }
            self = .attach(path: path, name: fileName, meta: meta, entry: entry)
        case .detach:
            try expectCount(1...1)
            self = .detach(try Self.attachmentID(args[0]))
        case .fetch:
            // A third argument, true, replaces a file already there (never by default).
            try expectCount(2...3)
            guard args.count < 3 || args[2].boolValue != nil else {
                throw CowatchError(.invalidArgument, "fetch's third argument is true (replace a file already there) or false")
            }
            self = .fetch(
                id: try Self.attachmentID(args[0]), path: try Self.absolutePath(args[1], what: "fetch"),
                force: args.count > 2 && args[2].boolValue == true)
        case .chat:
            try expectCount(1...1)
            self = .chat(try ChatLine.checked(args[0].stringValue ?? ""))
        case .sendMessage:
            try expectCount(2...4)
            guard let topic = args[0].stringValue, WireReader.isWord(topic), topic.utf8.count <= RoomMessage.maxTopicBytes else {
                throw CowatchError(.invalidArgument, "a topic is 1–\(RoomMessage.maxTopicBytes) of a-z, 0-9, '_' or '-'")
            }
            guard args[1].encoded().count <= RoomMessage.maxPayloadBytes else {
                throw CowatchError(.invalidArgument, "the payload is over \(RoomMessage.maxPayloadBytes) bytes of JSON")
            }
            var to: [String]?
            if args.count > 2, args[2] != .null, args[2] != .string("all") {
                guard let list = args[2].arrayValue, !list.isEmpty, list.count <= 64 else {
                    throw CowatchError(.invalidArgument, "recipients are \"all\" or a list of 1–64 names")
                }
                to = []
                for entry in list {
                    guard let recipient = entry.stringValue, (try? ParticipantName.validate(recipient)) != nil else {
                        throw CowatchError(.invalidArgument, "recipients are \"all\" or a list of participant names")
                    }
                    to?.append(recipient)
                }
            }
            var reliable = true
            if args.count > 3, args[3] != .null {
                guard let mode = args[3].stringValue, mode == "reliable" || mode == "unreliable" else {
                    throw CowatchError(.invalidArgument, "the mode is \"reliable\" or \"unreliable\"")
                }
                reliable = mode == "reliable"
            }
            self = .sendMessage(SendMessageRequest(topic: topic, payload: args[1], to: to, reliable: reliable))
        case .getInvite:
            try expectCount(0...1)
            var host: String?
            if let given = args.first {
                guard let text = given.stringValue, !text.isEmpty, text.utf8.count <= 255,
                    text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:[]".unicodeScalars.contains($0)) })
                else {
                    throw CowatchError(.invalidArgument, "get_invite takes a host name or address")
                }
                host = text
            }
            self = .getInvite(host: host)
        case .op, .deop, .kick:
            try expectCount(1...1)
            guard let participant = args[0].stringValue, (try? ParticipantName.validate(participant)) != nil else {
                throw CowatchError(
                    .invalidArgument,
                    "\(name) takes a participant name: 1–\(ParticipantName.maxLength) letters, digits, '.', '_' or '-', not starting with '.'")
            }
            switch kind {
            case .op: self = .setRole(name: participant, role: .operator)
            case .deop: self = .setRole(name: participant, role: .member)
            default: self = .kick(name: participant)
            }
        case .ready: try expectCount(0...0); self = .setReady(true)
        case .unready: try expectCount(0...0); self = .setReady(false)
        case .waitForMe:
            try expectCount(1...1)
            switch args[0] {
            case .bool(let on): self = .setWaitForMe(on)
            case .string("yes"), .string("on"), .string("true"): self = .setWaitForMe(true)
            case .string("no"), .string("off"), .string("false"): self = .setWaitForMe(false)
            default: throw CowatchError(.invalidArgument, "wait_for_me takes true or false")
            }
        case .open:
            // ["open", URL, TITLE?, TYPE?, FALLBACK?]; null skips an optional one.
            try expectCount(1...4)
            func text(_ index: Int, _ what: String) throws(CowatchError) -> String? {
                guard index < args.count, args[index] != .null else { return nil }
                guard let value = args[index].stringValue, !value.isEmpty, value.utf8.count <= Self.maxURLLength,
                    !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) })
                else {
                    throw CowatchError(
                        .invalidArgument, "\(what) must be a non-empty string of at most \(Self.maxURLLength) bytes without control characters")
                }
                return value
            }
            guard let url = try text(0, "the URL") else { throw CowatchError(.invalidArgument, "open needs a URL") }
            var type: ActivityType?
            if let raw = try text(2, "the type") {
                guard let parsed = ActivityType(rawValue: raw) else {
                    throw CowatchError(.invalidArgument, "the type must be watch or listen, not \"\(raw.prefix(40))\"")
                }
                type = parsed
            }
            let title = try text(1, "the title")
            if let title, title.utf8.count > Activity.maxTitleBytes {
                throw CowatchError(.invalidArgument, "the title must be at most \(Activity.maxTitleBytes) bytes")
            }
            self = .open(OpenRequest(url: url, title: title, type: type, fallbackURL: try text(3, "the fallback URL")))
        case .seek:
            try expectCount(1...2)
            let seconds = try Self.number(args[0], what: "seek target")
            var mode = SeekMode.relative
            if args.count == 2 {
                guard let text = args[1].stringValue else {
                    throw CowatchError(.invalidArgument, "seek mode must be \"absolute\" or \"relative\"")
                }
                // mpv spells these with flags such as "absolute+exact"; accept its first word.
                let word = text.split(separator: "+").first.map(String.init) ?? text
                guard let parsed = SeekMode(rawValue: word) else {
                    throw CowatchError(.invalidArgument, "seek mode must be \"absolute\" or \"relative\", not \"\(text)\"")
                }
                mode = parsed
            }
            if mode == .absolute && seconds < 0 {
                throw CowatchError(.invalidArgument, "an absolute seek target cannot be negative (\(seconds))")
            }
            self = .seek(seconds: seconds, mode: mode)
        case .speed:
            try expectCount(1...1)
            let rate = try Self.number(args[0], what: "speed")
            guard Self.speedRange.contains(rate) else {
                throw CowatchError(
                    .invalidArgument,
                    "speed must be between \(Self.speedRange.lowerBound) and \(Self.speedRange.upperBound), got \(rate)")
            }
            self = .speed(rate)
        case .getProperty:
            try expectCount(1...1)
            guard let property = args[0].stringValue, !property.isEmpty,
                property.utf8.count <= Self.maxPropertyNameLength,
                property.utf8.allSatisfy(Self.isPropertyNameByte)
            else {
                throw CowatchError(
                    .invalidArgument,
                    "get_property takes an mpv property name (letters, digits, '-', '_', '/', at most \(Self.maxPropertyNameLength) bytes)")
            }
            self = .getProperty(property)
        }
    }

    /// An attachment id: its SHA-256 in lowercase hex, or a prefix of at least 4 digits.
    private static func attachmentID(_ value: JSONValue) throws(CowatchError) -> String {
        guard let text = value.stringValue?.lowercased(), (4...64).contains(text.utf8.count),
            text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw CowatchError(.invalidArgument, "an attachment id is its SHA-256 in hex (or its first 4 or more digits)")
        }
        return text
    }

    /// An absolute path of at most 4096 bytes without control characters.
    static func absolutePath(_ value: JSONValue, what: String) throws(CowatchError) -> String {
        guard let path = value.stringValue, path.hasPrefix("/"), path.utf8.count <= 4096, ControlCharacters.isClean(path) else {
            throw CowatchError(.invalidArgument, "\(what) takes an absolute path")
        }
        return path
    }

    private static func number(_ value: JSONValue, what: String) throws(CowatchError) -> Double {
        let number: Double?
        switch value {
        case .number(let n): number = n
        case .string(let s): number = Double(s)
        default: number = nil
        }
        guard let number else {
            throw CowatchError(.invalidArgument, "\(what) must be a number")
        }
        guard number.isFinite else {
            throw CowatchError(.invalidArgument, "\(what) must be finite")
        }
        return number
    }

    private static func isPropertyNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "/"):
            true
        default: false
        }
    }
}
