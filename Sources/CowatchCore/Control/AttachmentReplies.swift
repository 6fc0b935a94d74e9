/// The journal's replies: `attach` and `detach` (the attachment), `get_attachments` (all of
/// them, oldest first) and `fetch` (the attachment and where it was put); and the attachment's
/// own object, which the `attachment-added` event carries too.
///
/// Each type's `json` and `init(json:)` are its one codec; `subtitles` is derived from the
/// attachment and never read back.
///
/// Threading: value types, safe to share.
/// Errors: the decoders throw `malformed-control-message` (see `ControlFields`).

extension Attachment {
    /// The attachment as the control protocol shows it (`attachment-added`, `get_attachments`,
    /// `attach`, `detach`, `fetch`): `id`, `name`, `size`, `participant`, `meta`, `subtitles`.
    public var controlFields: [String: JSONValue] {
        [
            "id": .string(id), "name": .string(name), "size": .count(size), "participant": .string(from),
            "meta": meta ?? .null, "subtitles": .bool(isSubtitles),
        ]
    }

    /// Reads the fields `controlFields` writes (`subtitles` is not read: `isSubtitles` says it).
    /// Errors: `malformed-control-message`.
    public init(controlFields fields: ControlFields) throws(CowatchError) {
        self.init(
            id: try fields.string("id"), name: try fields.string("name"), size: try fields.count("size"),
            from: try fields.string("participant"), meta: fields.value("meta"))
    }
}

/// `attach`'s and `detach`'s reply: the attachment added or removed.
public struct AttachmentReply: ControlReplyData {
    public var attachment: Attachment

    public init(_ attachment: Attachment) {
        self.attachment = attachment
    }

    public var json: JSONValue { .object(attachment.controlFields) }

    public init(json: JSONValue) throws(CowatchError) {
        attachment = try Attachment(controlFields: try ControlFields(json, what: "the attachment reply"))
    }
}

/// `get_attachments`'s reply: the room's attachments, oldest first, as a JSON array.
public struct AttachmentsReply: ControlReplyData {
    public var attachments: [Attachment]

    public init(attachments: [Attachment]) {
        self.attachments = attachments
    }

    public var json: JSONValue { .array(attachments.map { .object($0.controlFields) }) }

    public init(json: JSONValue) throws(CowatchError) {
        var attachments: [Attachment] = []
        for fields in try ControlFields.list(json, what: "the get_attachments reply") {
            attachments.append(try Attachment(controlFields: fields))
        }
        self.attachments = attachments
    }
}

/// `fetch`'s reply: the attachment's fields, `path` (where the file now is) and `resumed_from`
/// (the byte the successful attempt started from, above 0 when it resumed an interrupted one).
public struct FetchReply: ControlReplyData {
    public var attachment: Attachment
    /// The file written, absolute.
    public var path: String
    public var resumedFrom: Int

    public init(attachment: Attachment, path: String, resumedFrom: Int) {
        self.attachment = attachment
        self.path = path
        self.resumedFrom = resumedFrom
    }

    public var json: JSONValue {
        var object = attachment.controlFields
        object["path"] = .string(path)
        object["resumed_from"] = .count(resumedFrom)
        return .object(object)
    }

    public init(json: JSONValue) throws(CowatchError) {
        let fields = try ControlFields(json, what: "the fetch reply")
        attachment = try Attachment(controlFields: fields)
        path = try fields.string("path")
        resumedFrom = try fields.optionalCount("resumed_from") ?? 0
    }
}
