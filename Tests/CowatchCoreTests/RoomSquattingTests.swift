import Testing

@testable import CowatchCore

/// Issue 22, item 4: what it costs to hold a room's places or the server's rooms. Budgets count
/// an address as `AddressIdentity` says (an IPv6 /64 is one); a few addresses cannot fill a
/// room; members and rooms that say nothing give their place to newcomers.
@Suite("Rooms cannot be filled or squatted cheaply")
struct RoomSquattingTests: SequencerTesting {
    @Test("an IPv6 address counts as its /64, an IPv4-mapped one as its IPv4 address", arguments: [
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:eeee:dddd:cccc", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("fe80::1%eth0", "fe80:0:0:0::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("192.0.2.7", "192.0.2.7"),
        ("local", "local"),
        ("not an address", "not an address"),
    ])
    func addressKeys(address: String, key: String) {
        #expect(AddressIdentity.key(of: address) == key)
    }

    /// Connects `id` from `address` and joins `name` to `room`.
    func join(_ sequencer: inout RoomSequencer, _ name: String, room: String = "r", from address: String, id: Int, now: Double) -> [Output] {
        _ = sequencer.connected(id, address: address, now: now)
        return sequencer.enter(.hello(.init(room: room, name: name, activity: Activity(url: "/films/night.mkv"))), from: id, now: now)
    }

    func welcomed(_ outputs: [Output], _ id: Int) -> Bool {
        messages(outputs, to: id).contains { if case .welcome = $0 { true } else { false } }
    }

    func errorCode(_ outputs: [Output], to id: Int) -> String? {
        for case .error(let code, _) in messages(outputs, to: id) { return code }
        return nil
    }

    @Test("addresses in one IPv6 /64 share one connection budget")
    func ipv6Budget() {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.maxConnectionsPerAddress = 4
        var sequencer = RoomSequencer(configuration: configuration)
        for id in 1...4 { #expect(sequencer.connected(id, address: "2001:db8:7:7::\(id)", now: 0).isEmpty) }
        #expect(errorCode(sequencer.connected(5, address: "2001:db8:7:7::abcd", now: 0), to: 5) == "server-busy")
        #expect(sequencer.connected(6, address: "2001:db8:7:8::1", now: 0).isEmpty, "another /64")
    }

    @Test("one address holds at most maxMembersPerAddress places in a room; others still get in")
    func membersPerAddress() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxMembersPerAddress = 3
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for id in 1...3 { #expect(welcomed(join(&sequencer, "m\(id)", from: "198.51.100.1", id: id, now: 0), id)) }
        #expect(errorCode(join(&sequencer, "m4", from: "198.51.100.1", id: 4, now: 0), to: 4) == "room-full")
        #expect(errorCode(join(&sequencer, "m5", from: "2001:db8::5", id: 5, now: 0), to: 5) == nil)
        // The same address may still make a room of its own.
        #expect(welcomed(join(&sequencer, "m6", room: "other", from: "198.51.100.1", id: 6, now: 0), 6))
    }

    @Test("a newcomer to a full room takes the place of the member silent longest, only past silentEviction")
    func silentMemberMakesRoom() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxParticipantsPerRoom = 3
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for id in 1...3 { _ = join(&sequencer, "m\(id)", from: "198.51.100.\(id)", id: id, now: 0) }
        // Everyone reported lately: the room is full.
        for id in 1...3 { _ = sequencer.received(.report(drift: 0, rtt: 0.01), from: id, now: 10) }
        #expect(errorCode(join(&sequencer, "late", from: "198.51.100.9", id: 9, now: 20), to: 9) == "room-full")
        // m2 and m3 keep reporting, m1 says nothing: past 15 s of silence its place goes.
        for id in 2...3 { _ = sequencer.received(.report(drift: 0, rtt: 0.01), from: id, now: 26) }
        let outputs = join(&sequencer, "late", from: "198.51.100.9", id: 10, now: 26)
        #expect(welcomed(outputs, 10))
        #expect(errorCode(outputs, to: 1) == "timeout")
        #expect(outputs.contains(.close(1)))
        #expect(!outputs.contains(.close(2)) && !outputs.contains(.close(3)))
    }

    @Test("on a full server a new room takes the place of a room whose members all went silent, never a live one")
    func silentRoomGivesWay() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxRooms = 2
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        _ = join(&sequencer, "a", room: "live", from: "198.51.100.1", id: 1, now: 0)
        _ = join(&sequencer, "b", room: "squat", from: "198.51.100.2", id: 2, now: 0)
        _ = sequencer.received(.report(drift: 0, rtt: 0.01), from: 1, now: 10)
        #expect(errorCode(join(&sequencer, "c", room: "new", from: "198.51.100.3", id: 3, now: 10), to: 3) == "room-full")
        _ = sequencer.received(.report(drift: 0, rtt: 0.01), from: 1, now: 20)
        let outputs = join(&sequencer, "c", room: "new", from: "198.51.100.3", id: 4, now: 20)
        #expect(welcomed(outputs, 4))
        #expect(errorCode(outputs, to: 2) == "timeout")
        #expect(outputs.contains(.close(2)) && !outputs.contains(.close(1)))
    }
}
