import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// A participant's own media path never reaches the room: others learn the file's name only.
@Suite("Paths stay home", .realProcesses)
struct PathsStayHomeTests {
    @Test("a joiner of an open room learns the creator's file name, not its path")
    func welcomeHasNoPath() async throws {
        let media = try await TestMedia.file(.audioVideo)
        #expect(media.hasPrefix("/"))
        let host = try await DaemonProcess(name: "hana", media: media, extraArguments: ["--host", "127.0.0.1:\(freeLoopbackPort())", "--room", "den", "--no-osd"])
        defer { host.terminateInBackground() }
        try await host.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        let friend = try await DaemonProcess(name: "finn", media: media, extraArguments: ["--join", link, "--no-osd"])
        defer { friend.terminateInBackground() }
        let status = try await friend.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        let url = status.room?.activity.url
        #expect(url == (media as NSString).lastPathComponent)
        #expect(url?.contains("/") == false)
    }

    @Test("own media: a path or file: URL becomes its name; a network URL stays as given", arguments: [
        ("/home/ann/films/night.mkv", "night.mkv"), ("night.mkv", "night.mkv"), ("file:///home/ann/a%20b.mkv", "a%20b.mkv"),
        ("https://example.org/v/film.mkv", "https://example.org/v/film.mkv"), ("/", "media"),
    ])
    func ownMediaURL(media: String, sent: String) {
        #expect(Activity.ownMediaURL(media) == sent)
    }
}
