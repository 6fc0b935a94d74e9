import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

/// `cowatch share`, `unshare` and `shares`: films streamed to members who lack them.

private func sizeText(_ bytes: Int) -> String {
    bytes < 1_073_741_824 ? String(format: "%.1f MiB", Double(bytes) / 1_048_576) : String(format: "%.2f GiB", Double(bytes) / 1_073_741_824)
}

private func rateText(_ bytesPerSecond: Double) -> String {
    String(format: "%.1f Mbit/s", bytesPerSecond * 8 / 1_000_000)
}

/// The lines `shares` prints (and `share`/`unshare` after their change; `participants` without
/// the first when nobody shares).
func describe(_ reply: SharesReply, sayingNone: Bool = true) -> [String] {
    var lines: [String] = []
    if reply.offers.isEmpty, sayingNone { lines.append("nobody shares a film") }
    for offer in reply.offers { lines.append("\(offer.by) shares \(offer.name) (\(sizeText(offer.size)))") }
    if let receiving = reply.receiving {
        var line = "playing \(receiving.name) streamed from \(receiving.from): \(sizeText(receiving.received)) received, "
            + "\(rateText(receiving.rate)), \(sizeText(receiving.ahead)) ahead"
            + (receiving.onDisk > 0 ? ", \(sizeText(receiving.onDisk)) kept on disk" : "")
        if let problem = receiving.problem { line += " — \(problem)" }
        lines.append(line)
    }
    for serving in reply.serving {
        lines.append("streaming \(serving.name) to \(serving.to): \(sizeText(serving.sent)) sent, \(rateText(serving.rate))")
    }
    return lines
}

/// A participant's stream in `participants`: "streams from alice, 41 s (62.0 MiB) ahead, 9.3 Mbit/s".
func describe(_ stream: ParticipantsReply.Stream) -> String {
    let ahead = stream.aheadSeconds.map { "\(Int($0.rounded())) s (\(sizeText(stream.aheadBytes)))" } ?? sizeText(stream.aheadBytes)
    return "streams from \(stream.from), \(ahead) ahead, \(rateText(stream.rate))"
}

struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offer a film to the room: members who lack it play it streamed from you, in lockstep.",
        discussion: "Only that file can be read, under its identity (its size and fingerprint; never its path), until you unshare it or leave. Limit the upload with cowatchd --share-rate.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The file (default: what your player plays).")
    var file: String?

    func run() throws {
        let data = try connection.send(try ControlCommand(arguments: ["share"] + (file.map { [.string(absolute($0))] } ?? [])), timeout: 600)
        if connection.json { return printJSON(data) }
        for line in describe(try connection.read(SharesReply.self, from: data)) { print(line) }
    }
}

struct Unshare: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop offering your films: their streams stop, and those who played them are told why.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.unshare)
        if connection.json { return printJSON(data) }
        for line in describe(try connection.read(SharesReply.self, from: data)) { print(line) }
    }
}

struct Shares: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Who shares which film, what you play streamed (how far ahead it is) and whom you stream to.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.getShares)
        if connection.json { return printJSON(data) }
        for line in describe(try connection.read(SharesReply.self, from: data)) { print(line) }
    }
}
