import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

/// `cowatch attach`, `attachments`, `detach` and `fetch`: the room's journal.

/// Seconds a transfer may take before the CLI stops waiting (the daemon carries on).
private let transferTimeout = 3600.0

/// An absolute form of a path given on the command line (the daemon has another working directory).
func absolute(_ path: String) -> String {
    let expanded = (path as NSString).expandingTildeInPath
    return expanded.hasPrefix("/") ? expanded : FileManager.default.currentDirectoryPath + "/" + expanded
}

private func describe(_ attachment: Attachment) -> String {
    let size = attachment.size
    let sizeText = size < 1_048_576 ? "\((size + 1023) / 1024) KiB" : String(format: "%.1f MiB", Double(size) / 1_048_576)
    return "\(attachment.id.prefix(12))  \(attachment.name)  \(sizeText)  from \(attachment.from)"
        + (attachment.meta.map { "  \($0.jsonString)" } ?? "")
}

struct Attach: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share a file (up to 100 MiB) with the room: everyone can fetch it, late joiners too; subtitles (.srt, .ass, .ssa, .vtt) are added to every player.",
        discussion: "It stays after you leave, until you or someone detaches it or the room empties.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The file.")
    var file: String
    // `--name` picks the daemon, as for every command.
    @Option(name: .customLong("as"), help: ArgumentHelp("The name others see (default: the file's name).", valueName: "NAME"))
    var sharedName: String?
    @Option(help: ArgumentHelp("Metadata, a JSON object, e.g. '{\"kind\":\"subtitles\"}'.", valueName: "JSON"))
    var meta: String?
    @Option(help: ArgumentHelp(
        "Subtitles for playlist entry #N: each player adds them when that entry plays (its number in `cowatch playlist` now).",
        valueName: "N"))
    var entry: Int?

    func run() throws {
        var metaValue: JSONValue = .null
        if let meta {
            guard let parsed = try? JSONValue.parse(Array(meta.utf8)), parsed.objectValue != nil else {
                throw ValidationError("--meta takes a JSON object, e.g. '{\"kind\":\"subtitles\"}'")
            }
            metaValue = parsed
        }
        let command = try ControlCommand(arguments: [
            "attach", .string(absolute(file)), sharedName.map(JSONValue.string) ?? .null, metaValue,
        ] + (entry.map { [.number(Double($0))] } ?? []))
        let data = try connection.send(command, timeout: transferTimeout)
        if connection.json {
            printJSON(data)
        } else {
            print("attached " + describe(try connection.read(AttachmentReply.self, from: data).attachment))
        }
    }
}

struct Attachments: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the room's attachments: id, name, size, who added it, metadata.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.getAttachments)
        if connection.json {
            printJSON(data)
            return
        }
        let list = try connection.read(AttachmentsReply.self, from: data).attachments
        if list.isEmpty { print("no attachments") }
        for attachment in list { print(describe(attachment)) }
    }
}

struct Detach: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove an attachment for everyone (by its id, or its first digits).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The attachment's id (SHA-256), or at least its first 4 digits.")
    var id: String

    func run() throws {
        let data = try connection.send(try ControlCommand(arguments: ["detach", .string(id)]))
        if connection.json {
            printJSON(data)
        } else {
            print("detached " + describe(try connection.read(AttachmentReply.self, from: data).attachment))
        }
    }
}

struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download an attachment (checked by its SHA-256; an interrupted download resumes).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The attachment's id (SHA-256), or at least its first 4 digits.")
    var id: String
    @Option(name: .shortAndLong, help: "Where to put it: a file, or a directory (default: the current directory).")
    var output: String?
    @Flag(help: "Replace a file already there (default: refuse, already-exists).")
    var force = false

    func run() throws {
        let command = try ControlCommand(arguments: [
            "fetch", .string(id), .string(absolute(output ?? FileManager.default.currentDirectoryPath)),
        ] + (force ? [.bool(true)] : []))
        let data = try connection.send(command, timeout: transferTimeout)
        if connection.json { printJSON(data) } else { print("fetched \(try connection.read(FetchReply.self, from: data).path)") }
    }
}
