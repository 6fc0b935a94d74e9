import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// What a room may make a player open, with real processes: `--allow-scheme`, `--accept-open ask`
/// and `--trust-host`; a refused switch leaves that player out while the others play on.
@Suite("What a room may make a player open", .serialized, .realProcesses)
struct RoomOpenPolicyTests {
    @Test("a switch to a scheme this player does not allow is refused here (open-refused); the others play the new media")
    func schemeNotAllowed() async throws {
        let first = try await TestMedia.file(.audioVideo)
        let http = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        defer { http.close() }
        let viewers = try await DaemonRoom(room: "schemes")
        try await viewers.add("ann", media: first)
        try await viewers.add("ben", media: first, arguments: ["--allow-scheme", "https"])
        try await viewers.add("cid", media: first)
        try await viewers.waitJoined(0, participants: 3)

        // ben refuses his own switch to http at once: he would not follow it.
        #expect(await viewers.failure(1, .open(.init(url: http.url)))?.code == .openRefused)
        // A local path is the server's to refuse, for every room.
        #expect(await viewers.failure(0, .open(.init(url: try await TestMedia.file(.videoOnly))))?.code == .notPermitted)

        try await viewers.clients[0].request(.open(.init(url: http.url, title: "Over HTTP")))
        let refused = try await viewers.listeners[1].waitForEvent(named: "error", timeout: 10) { $0.fields["code"] == "open-refused" }
        #expect(refused?.fields["message"]?.stringValue?.contains("http:") == true, "\(String(describing: refused))")
        for index in [0, 2] {
            _ = try await viewers.clients[index].waitForStatus(timeout: 20) { $0.media == http.url && !$0.paused && ($0.position ?? 0) > 0.5 }
        }
        // ben stays on his own media, held, and the group does not wait for him.
        let ben = try await viewers.clients[1].status()
        #expect(ben.media == first && ben.paused)
        #expect(ben.room?.canPlay == false && ben.room?.activity.id == 1)
        let stillBen = try await viewers.clients[1].status().position
        await pause(1)
        #expect(try await viewers.clients[1].status().position == stillBen, "ben's player is left alone")
        #expect(try await viewers.clients[0].status().paused == false)
    }

    @Test("--accept-open ask: the switch is offered, and opened only after cowatch accept; a late joiner keeps its own first media")
    func askFirst() async throws {
        let first = try await TestMedia.file(.audioVideo)
        let own = try await TestMedia.file(.videoOnly)
        let http = try SlowMediaServer(file: own)
        defer { http.close() }
        let viewers = try await DaemonRoom(room: "asking")
        try await viewers.add("dee", media: first)
        // The room's first media is dee's local path: cy keeps her own --media.
        try await viewers.add("cy", media: own, arguments: ["--accept-open", "ask"])
        try await viewers.waitJoined(1, participants: 2)
        #expect(try await viewers.clients[1].status().media == own)
        #expect(await viewers.failure(1, .acceptOpen)?.code == .invalidRequest)

        try await viewers.clients[0].request(.open(.init(url: http.url, title: "Offered")))
        let offer = try await viewers.listeners[1].waitForEvent(named: "open-offer", timeout: 10)
        #expect(offer?.fields["by"] == "dee" && offer?.fields["url"]?.stringValue == http.url)
        _ = try await viewers.clients[0].waitForStatus(timeout: 20) { $0.media == http.url && !$0.paused }
        await pause(0.5)
        var cy = try await viewers.clients[1].status()
        #expect(cy.media == own && cy.room?.openOffer?.url == http.url)
        #expect(cy.room?.canPlay == false)

        let accepted = try await runCowatch(["accept", "--socket", viewers.daemons[1].controlPath])
        #expect(accepted.status == 0, "\(accepted)")
        cy = try await viewers.clients[1].waitForStatus(timeout: 20) { $0.media == http.url && !$0.paused && ($0.position ?? 0) > 0.3 }
        #expect(cy.room?.canPlay == true && cy.room?.openOffer == nil)
        // And cy is back in step with dee.
        let deadline = monotonicNow() + 10
        var gap = Double.infinity
        while monotonicNow() < deadline && gap > 0.1 {
            gap = abs(try await viewers.clients[0].status().position! - viewers.clients[1].status().position!)
            await pause(0.2)
        }
        #expect(gap < 0.1, "cy is \(gap) s from dee")
    }
}

extension RoomOpenPolicyTests {
    @Test("--accept-open operators: a member's switch is refused here, an operator's is followed")
    func operatorsOnly() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let first = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        let second = try SlowMediaServer(file: media)
        defer {
            first.close()
            second.close()
        }
        let viewers = try await DaemonRoom(room: "operators")
        // ann follows bo's switches while he is a member only because she trusts the host.
        try await viewers.add("ann", media: media, arguments: ["--trust-host", "127.0.0.1"])
        try await viewers.add("bo", media: media)
        try await viewers.add("cy", media: media, arguments: ["--accept-open", "operators"])
        try await viewers.waitJoined(2, participants: 3)

        try await viewers.clients[1].request(.open(.init(url: first.url)))
        let refused = try await viewers.listeners[2].waitForEvent(named: "error", timeout: 10) { $0.fields["code"] == "open-refused" }
        #expect(refused?.fields["message"]?.stringValue?.contains("bo is not the room's owner or an operator") == true)
        _ = try await viewers.clients[0].waitForStatus(timeout: 20) { $0.media == first.url && !$0.paused }
        #expect(try await viewers.clients[2].status().media == media)

        // Made an operator, bo's next switch is followed at once (before the next participant list).
        try await viewers.clients[0].request(.setRole(name: "bo", role: .operator))
        try await viewers.clients[1].request(.open(.init(url: second.url)))
        for client in viewers.clients {
            _ = try await client.waitForStatus(timeout: 20) { $0.media == second.url && !$0.paused && ($0.position ?? 0) > 0.3 }
        }
        #expect(try await viewers.roomStatus(2)["can_play"] == true)
    }

    @Test("--trust-host: a member's switch to a host nobody trusts is offered to the others; to a trusted host it opens at once")
    func trustedHostsOnly() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let elsewhere = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        let trusted = try SlowMediaServer(file: media)
        defer {
            elsewhere.close()
            trusted.close()
        }
        // The same machine under a name the viewers trust, where 127.0.0.1 is a host they do not.
        let trustedURL = trusted.url.replacingOccurrences(of: "http://127.0.0.1:", with: "http://localhost:")
        let viewers = try await DaemonRoom(room: "trusting")
        try await viewers.add("ann", media: media, arguments: ["--trust-host", "localhost"])
        try await viewers.add("bo", media: media)
        try await viewers.add("cy", media: media, environment: ["COWATCH_TRUST_HOSTS": "example.org, LOCALHOST."])
        try await viewers.waitJoined(2, participants: 3)

        // bo, a member (not the owner, not an operator), sends everyone to a host nobody trusts.
        try await viewers.clients[1].request(.open(.init(url: elsewhere.url, title: "Elsewhere")))
        for index in [0, 2] {
            let offer = try await viewers.listeners[index].waitForEvent(named: "open-offer", timeout: 10)
            #expect(offer?.fields["by"] == "bo" && offer?.fields["url"]?.stringValue == elsewhere.url, "\(String(describing: offer))")
        }
        _ = try await viewers.clients[1].waitForStatus(timeout: 20) { $0.media == elsewhere.url }
        await pause(1)
        for index in [0, 2] {
            let status = try await viewers.clients[index].status()
            #expect(status.media == media && status.room?.openOffer?.url == elsewhere.url, "viewer \(index) stays on its media")
        }

        // To a trusted host, bo's switch opens at once for everyone.
        try await viewers.clients[1].request(.open(.init(url: trustedURL, title: "Trusted")))
        for client in viewers.clients {
            let status = try await client.waitForStatus(timeout: 20) { $0.media == trustedURL && !$0.paused && ($0.position ?? 0) > 0.3 }
            #expect(status.room?.openOffer == nil && status.room?.canPlay == true)
        }
    }
}

/// A taken name on a rejoin leaves the daemon running and out of the room; join tries again.
@Suite("A taken name on a rejoin", .serialized, .realProcesses)
struct NameTakenOnRejoinTests {
    @Test("name-taken on a rejoin: the daemon stays up, out of the room, says so; join succeeds once the name is free")
    func nameTakenOnRejoin() async throws {
        // ann (0) creates (and owns) the room; bob (1) is a member. His name stays his while he
        // is out, for as long as the room is remembered (NameHeldTests); an end forgets it.
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "names")
        try await viewers.add("ann")
        try await viewers.add("bob")
        try await viewers.clients[1].request(.leave)
        try await viewers.clients[0].request(.end)
        // A new evening: someone else named bob (2) gets there first, and the name is his now;
        // bob's token, from the evening that ended, does not take it back.
        try await viewers.clients[0].request(.join)
        try await viewers.add("bob")

        let refused = await viewers.failure(1, .join)
        #expect(refused?.code == .nameTaken, "\(String(describing: refused))")
        #expect(viewers.daemons[1].process.isRunning)
        let status = try await viewers.roomStatus(1)
        #expect(status["session"] == "invalidated" && status["reason"] == "name-taken")
        let event = try await viewers.listeners[1].waitForEvent(named: "error", timeout: 2) { $0.fields["code"] == "name-taken" }
        #expect(event != nil)
        #expect(viewers.daemons[1].stderr.contains("already in room names"), "\(viewers.daemons[1].stderr)")

        // Once the name is free (the other bob gone, and the room that held his name ended), join works.
        #expect(await viewers.daemons[2].terminate() == 0)
        try await viewers.clients[0].request(.end)
        let joined = try await viewers.clients[1].request(.join)
        #expect(joined["room"]?["session"] == "joined")
    }
}
