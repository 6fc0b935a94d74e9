import Testing

@testable import CowatchCore

@Suite("Cluster: leases, placement and redirects")
struct ClusterLogicTests {
    static let me = Endpoint(host: "10.0.0.1", port: 7433)

    @Test("placement: absent → claim, ours → serve, another's → redirect, garbage → unavailable")
    func placement() {
        #expect(RoomPlacement.decide(owner: nil, me: Self.me) == .claim)
        #expect(RoomPlacement.decide(owner: "10.0.0.1:7433", me: Self.me) == .serve)
        #expect(RoomPlacement.decide(owner: "10.0.0.2:7433", me: Self.me) == .redirect(Endpoint(host: "10.0.0.2", port: 7433)))
        #expect(RoomPlacement.decide(owner: "[2001:db8::2]:7433", me: Self.me) == .redirect(Endpoint(host: "2001:db8::2", port: 7433)))
        for garbage in ["", "nohost", "h:0", "h:99999", "evil host:1", "h/x:1", String(repeating: "a", count: 300) + ":1"] {
            guard case .unavailable = RoomPlacement.decide(owner: garbage, me: Self.me) else {
                Issue.record("\(garbage) was taken for an address")
                continue
            }
        }
        #expect(RoomPlacement.text(of: Endpoint(host: "2001:db8::2", port: 1)) == "[2001:db8::2]:1")
    }

    @Test("a claimed room is trusted until its lease, less the margin, from when the claim was sent")
    func trustWindow() {
        var leases = RoomLeases()
        #expect(!leases.holds("r", now: 0))
        leases.claimed("r", sentAt: 100)
        #expect(leases.holds("r", now: 108.9))
        #expect(!leases.holds("r", now: 109))
        #expect(!leases.holds("other", now: 101))
    }

    @Test("a live room is renewed every renew interval, one renewal at a time")
    func renewals() {
        var leases = RoomLeases()
        leases.claimed("r", sentAt: 0)
        #expect(leases.tick(now: 1, live: ["r"]).isEmpty)
        #expect(leases.tick(now: 3, live: ["r"]) == [.renew("r")])
        // The answer is late: no second renewal meanwhile.
        #expect(leases.tick(now: 6.5, live: ["r"]).isEmpty)
        #expect(leases.renewed("r", held: true, sentAt: 3, live: true).isEmpty)
        #expect(leases.holds("r", now: 11.9))
        #expect(!leases.holds("r", now: 12))
        #expect(leases.tick(now: 6.6, live: ["r"]) == [.renew("r")])
        #expect(leases.renewed("r", held: true, sentAt: 6.6, live: true).isEmpty)
        #expect(leases.holds("r", now: 15.5))
        // Held for minutes on renewals alone.
        var now = 6.6
        for _ in 0..<100 {
            now += 0.5
            for action in leases.tick(now: now, live: ["r"]) {
                #expect(action == .renew("r"))
                _ = leases.renewed("r", held: true, sentAt: now, live: true)
            }
        }
        #expect(leases.holds("r", now: now))
        #expect(leases.nextDeadline().map { $0 > now && $0 <= now + 3 } == true)
    }

    @Test("a room empty for the grace period is released; a claim waiting for its welcome is not")
    func release() {
        var leases = RoomLeases()
        leases.claimed("r", sentAt: 0)
        // The hello is still in its handshake: not live yet, within the grace.
        #expect(leases.tick(now: 2, live: []).isEmpty)
        #expect(leases.tick(now: 4, live: ["r"]) == [.renew("r")])
        _ = leases.renewed("r", held: true, sentAt: 4, live: true)
        #expect(leases.tick(now: 5, live: []).isEmpty)
        #expect(leases.tick(now: 7, live: []) == [.renew("r")])
        _ = leases.renewed("r", held: true, sentAt: 7, live: false)
        // Empty since 4 (its last member): released at 4 + 6.
        #expect(leases.tick(now: 9.9, live: []).isEmpty)
        #expect(leases.tick(now: 10, live: []) == [.release("r")])
        #expect(leases.rooms.isEmpty)
        #expect(!leases.holds("r", now: 10))
        #expect(leases.nextDeadline() == nil)
    }

    @Test("another owner in the directory evicts the room here")
    func lostToAnother() {
        var leases = RoomLeases()
        leases.claimed("r", sentAt: 0)
        #expect(leases.tick(now: 3, live: ["r"]) == [.renew("r")])
        #expect(leases.renewed("r", held: false, sentAt: 3, live: true) == [.evict("r")])
        #expect(leases.rooms.isEmpty)
        leases.claimed("s", sentAt: 0)
        #expect(leases.ownedElsewhere("s", live: false).isEmpty)
        #expect(leases.rooms.isEmpty)
    }

    @Test("an unreachable directory: the room runs on until its lease is out, then is evicted")
    func unreachableDirectory() {
        var leases = RoomLeases()
        leases.claimed("r", sentAt: 0)
        var evictedAt: Double?
        var now = 0.0
        while now < 20, evictedAt == nil {
            now += 0.25
            for action in leases.tick(now: now, live: ["r"]) {
                switch action {
                case .renew(let room): _ = leases.renewed(room, held: nil, sentAt: now, live: true)
                case .evict: evictedAt = now
                case .release: Issue.record("a live room was released")
                }
            }
        }
        // Trusted until 10 − 1: given up before the directory could hand it to another server.
        #expect(evictedAt == 9)
        #expect(leases.rooms.isEmpty)
    }

    @Test("lease timing scales from one number")
    func scaledConfiguration() {
        let configuration = RoomLeases.Configuration(lease: 4)
        #expect(abs(configuration.renewInterval - 1.2) < 1e-9)
        #expect(abs(configuration.emptyGrace - 2.4) < 1e-9)
        #expect(abs(configuration.safetyMargin - 0.4) < 1e-9)
        #expect(RoomLeases.Configuration().lease == 10)
    }

    @Test("a daemon follows a few redirects, pinned to the redirecting server's key, then starts again at its own server")
    func route() {
        let origin = Endpoint(host: "cw.example.org", port: 7433)
        var route = ClusterRoute(origin: origin)
        #expect(route.target == origin)
        #expect(route.pinned == nil)
        let a = Endpoint(host: "10.0.0.2", port: 7433)
        #expect(route.redirected(to: a, fingerprint: "sha256:abc") == .follow)
        #expect(route.target == a)
        #expect(route.pinned == "sha256:abc")
        route.welcomed()
        #expect(route.hops == 0)
        // The owner's link drops: back to our own server, which knows the new owner.
        route.connectionEnded()
        #expect(route.target == origin)
        #expect(route.pinned == nil)
        // A loop of redirects is given up after three hops.
        for hop in 1...3 {
            #expect(route.redirected(to: Endpoint(host: "10.0.0.\(hop)", port: 1), fingerprint: "") == .follow)
            #expect(route.pinned == nil)
        }
        guard case .giveUp(let error) = route.redirected(to: a, fingerprint: "") else {
            Issue.record("a fourth redirect in a row was followed")
            return
        }
        #expect(error.code == .serverBusy)
        #expect(route.target == origin)
        #expect(route.hops == 0)
    }
}

@Suite("Cluster: room records in the directory")
struct ClusterRecordTests: SequencerTesting {
    static let record = RoomSequencer.RoomRecord(
        verifier: RoomVerifier(salt: String(repeating: "1a", count: 16), key: String(repeating: "2b", count: 32)),
        owner: "alice", ownerToken: String(repeating: "ab", count: 16), operators: ["bob": String(repeating: "cd", count: 16)])

    @Test("a record survives the directory's JSON, with or without a secret")
    func roundTrip() throws {
        for record in [Self.record, RoomSequencer.RoomRecord(owner: "x", ownerToken: String(repeating: "0", count: 32))] {
            let value = try JSONValue.parse(record.directoryJSON.encoded())
            #expect(RoomSequencer.RoomRecord(directoryJSON: value) == record)
        }
    }

    static let malformed: [String] = [
        #"[]"#,
        #"{"salt":"1a1a","key":"2b"}"#,
        #"{"salt":"\#(String(repeating: "1a", count: 16))"}"#,
        #"{"owner":"a b"}"#,
        #"{"owner":"alice","owner_token":"not hex"}"#,
        #"{"operators":{"bob":"short"}}"#,
        #"{"operators":{"bad name":"\#(String(repeating: "cd", count: 16))"}}"#,
        #"{"operators":[]}"#,
    ]

    @Test("a malformed record from the directory is refused", arguments: malformed)
    func refused(text: String) throws {
        #expect(RoomSequencer.RoomRecord(directoryJSON: try JSONValue.parse(Array(text.utf8))) == nil)
    }

    @Test("a moved room keeps its secret and its owner: the new server adopts the directory's record")
    func adopted() {
        var sequencer = RoomSequencer()
        let taken = sequencer.adopt(Self.record, for: "r", now: 0)
        #expect(taken)
        _ = sequencer.connected(1, now: 0)
        let greeting = sequencer.received(.hello(.init(room: "r", name: "mallory", nonce: RoomSecret.nonce())), from: 1, now: 0)
        guard case .send(1, .challenge(let challenge))? = greeting.first else {
            Issue.record("no challenge: \(greeting)")
            return
        }
        // A stranger coming first cannot create the room anew: it needs the secret.
        #expect(challenge.access == .secret(salt: Self.record.verifier!.salt))
        #expect(sequencer.directoryRecord(of: "r") == nil)  // not live yet
        // A live room is never replaced by the directory's copy.
        var live = room(["alice", "bob"])
        let replaced = live.adopt(Self.record, for: "r", now: 1)
        #expect(!replaced)
        #expect(live.directoryRecord(of: "r")?.owner == "alice")
    }

    @Test("a room whose first hello is still in its handshake is in use: its claim is kept, and an eviction closes that hello too")
    func handshakeKeepsTheClaim() {
        var sequencer = RoomSequencer()
        _ = sequencer.connected(1, now: 0)
        _ = sequencer.received(.hello(.init(room: "r", name: "alice", nonce: RoomSecret.nonce())), from: 1, now: 0)
        #expect(sequencer.liveRooms.isEmpty)
        #expect(sequencer.roomsInUse == ["r"])
        #expect(sequencer.connections(in: "r") == [1])
        // Past the 1.8 s grace with the handshake still going: renewed, not released. The same
        // ticks with nobody there release it.
        func run(live: () -> Set<String>) -> [RoomLeases.Action] {
            var leases = RoomLeases(configuration: .init(lease: 3))
            leases.claimed("r", sentAt: 0)
            var actions: [RoomLeases.Action] = []
            for step in 1...25 {
                let now = Double(step) * 0.1
                let due = leases.tick(now: now, live: live())
                actions += due
                for case .renew(let room) in due { actions += leases.renewed(room, held: true, sentAt: now, live: live().contains(room)) }
            }
            return actions
        }
        let kept = run { sequencer.roomsInUse }
        #expect(!kept.contains(.release("r")), "\(kept)")
        #expect(kept.contains(.renew("r")))
        #expect(run { [] }.contains(.release("r")))
    }
}
