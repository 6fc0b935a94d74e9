import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// An invite with several addresses (`alt=`): the joining daemon races them and says which one
/// worked; when none answers, it names each with why.
@Suite("Invites with several addresses", .realProcesses)
struct InviteAddressRaceTests {
    @Test("a first address that never answers does not hold the join up; the daemon says which address worked")
    func raceToTheAlternate() async throws {
        let port = freeLoopbackPort()
        let media = try await TestMedia.file(.audioVideo)
        let host = try await DaemonProcess(name: "hana", media: media, extraArguments: ["--host", "127.0.0.1:\(port)", "--room", "den", "--no-osd"])
        defer { host.terminateInBackground() }
        try await host.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        var invite = try Invite.parse(link)
        // An address nothing answers on comes first, as a stale router address would.
        let silent = try SilentLoopbackAddress()
        defer { silent.close() }
        invite.host = "127.0.0.1"
        invite.port = silent.port
        invite.alternates = [Endpoint(host: "127.0.0.1", port: port)]
        let started = monotonicNow()
        let friend = try await DaemonProcess(name: "finn", media: media, extraArguments: ["--join", invite.text, "--no-osd"])
        defer { friend.terminateInBackground() }
        try await friend.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        // Well under the 5 s a connection attempt may take (generous for a loaded machine).
        #expect(monotonicNow() - started < 4.5)
        #expect(friend.stderr.contains("reached the room server at 127.0.0.1:\(port) (the invite's other address 127.0.0.1:\(silent.port) did not answer first)"), "\(friend.stderr)")
    }

    @Test("when no address answers, the daemon names each one and why it failed")
    func everyAddressFails() async throws {
        let first = freeLoopbackPort()
        let second = freeLoopbackPort()
        var invite = Invite(host: "127.0.0.1", port: first, room: "den", tls: false)
        invite.alternates = [Endpoint(host: "::1", port: second)]
        let friend = try await DaemonProcess(name: "finn", media: try await TestMedia.file(.audioVideo), extraArguments: ["--join", invite.text, "--no-osd"])
        defer { friend.terminateInBackground() }
        let said = "cannot reach the room server at any of its addresses: 127.0.0.1:\(first) (connection refused"
        let deadline = monotonicNow() + 15
        while !friend.stderr.contains(said), monotonicNow() < deadline { await pause(0.05) }
        #expect(friend.stderr.contains(said), "\(friend.stderr)")
        #expect(friend.stderr.contains("[::1]:\(second) ("), "\(friend.stderr)")
    }
}
