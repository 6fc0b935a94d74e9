@testable import CowatchCore
import Testing

/// Issue 22, item 6: what the journal's quotas and transfer slots cost. Reservations are paid in
/// bytes received and go with their owner; one address cannot fill the server's store or take
/// every transfer slot; nobody resumes from someone else's partial bytes.
@Suite("Journal reservations follow what an identity pays")
struct JournalReservationTests: SequencerTesting {
    static func id(_ n: Int) -> String { String(repeating: String(format: "%02x", n), count: 32) }

    struct Room {
        var sequencer: RoomSequencer
        var tokens: [String: String] = [:]
        var addresses: [String: String] = [:]
        var nextConnection = 100

        /// `name` joins `room` from `address` on connection `id`.
        mutating func join(_ name: String, room: String = "r", from address: String, id: Int) {
            _ = sequencer.connected(id, address: address, now: 0)
            let outputs = sequencer.enter(
                .hello(.init(features: [WireFeature.journal], room: room, name: name, activity: Activity(url: "/f.mkv"))), from: id, now: 0)
            for case .send(id, .welcome(let welcome)) in outputs { tokens[name] = welcome.token }
            addresses[name] = address
        }

        /// `name` starts an upload on a new transfer connection from its address: the connection and outputs.
        mutating func upload(_ name: String, id content: String, size: Int, room: String = "r") -> (Int, [RoomSequencer.Output]) {
            nextConnection += 1
            let connection = nextConnection
            _ = sequencer.connected(connection, address: addresses[name] ?? "local", now: 1)
            let request = TransferRequest(
                room: room, name: name, token: tokens[name] ?? "00.00", kind: .upload, id: content, size: size, fileName: "x.srt")
            return (connection, sequencer.received(.transfer(request), from: connection, now: 1))
        }
    }

    func errorCode(_ outputs: [RoomSequencer.Output], to id: Int) -> String? {
        for case .send(id, .error(let code, _)) in outputs { return code }
        return nil
    }

    func configuration() -> RoomSequencer.Configuration {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        return configuration
    }

    @Test("announced uploads that send nothing hold nothing once interrupted, and go with their owner")
    func phantomsCostNothing() {
        var configuration = configuration()
        configuration.journal.roomQuotaBytes = 3000
        configuration.journal.maxAttachmentsPerRoom = 4
        var room = Room(sequencer: RoomSequencer(configuration: configuration))
        room.join("alice", from: "198.51.100.1", id: 1)
        room.join("eve", from: "203.0.113.9", id: 2)
        // Eve announces three uploads of 1000 bytes: while they stream, they reserve the room's quota.
        var eves: [Int] = []
        for n in 1...3 {
            let (connection, outputs) = room.upload("eve", id: Self.id(n), size: 1000)
            #expect(errorCode(outputs, to: connection) == nil)
            eves.append(connection)
        }
        let (blocked, refused) = room.upload("alice", id: Self.id(9), size: 1000)
        #expect(errorCode(refused, to: blocked) == "quota-exceeded")
        _ = room.sequencer.disconnected(blocked, now: 1)
        // Her bytes never come: the shell gives up on them, and they hold what they received.
        for connection in eves {
            room.sequencer.uploadInterrupted(connection, received: 10)
            _ = room.sequencer.disconnected(connection, now: 40)
        }
        #expect(room.sequencer.journal.bytes(in: "r") == 30)
        let (alice, fits) = room.upload("alice", id: Self.id(9), size: 1000)
        #expect(errorCode(fits, to: alice) == nil)
        // Eve leaves: her interrupted uploads go, bytes and all; the room's count drops.
        let left = room.sequencer.disconnected(2, now: 41)
        for n in 1...3 { #expect(left.contains(.deleteStored(Self.id(n)))) }
        #expect(room.sequencer.journal.bytes(in: "r") == 1000)
    }

    @Test("an upload under way whose owner leaves is closed, and its bytes go when it ends")
    func streamingUploadGoesWithOwner() {
        var room = Room(sequencer: RoomSequencer(configuration: configuration()))
        room.join("alice", from: "198.51.100.1", id: 1)
        room.join("eve", from: "203.0.113.9", id: 2)
        let (connection, _) = room.upload("eve", id: Self.id(1), size: 1000)
        let left = room.sequencer.disconnected(2, now: 2)
        #expect(left.contains(.close(connection)))
        #expect(room.sequencer.journal.bytes(in: "r") == 0)
        room.sequencer.uploadInterrupted(connection, received: 500)
        #expect(room.sequencer.disconnected(connection, now: 3) == [.deleteStored(Self.id(1))])
    }

    @Test("one address holds at most its quota over all its rooms; another address still uploads")
    func addressQuota() {
        var configuration = configuration()
        configuration.journal.addressQuotaBytes = 2500
        configuration.journal.totalQuotaBytes = 10_000
        var room = Room(sequencer: RoomSequencer(configuration: configuration))
        for n in 1...4 { room.join("eve\(n)", room: "eve-room-\(n)", from: "2001:db8:6:6::\(n)", id: n) }
        room.join("alice", room: "home", from: "198.51.100.1", id: 10)
        var stored = 0
        var codes: [String?] = []
        for n in 1...4 {
            let (connection, outputs) = room.upload("eve\(n)", id: Self.id(n), size: 1000, room: "eve-room-\(n)")
            codes.append(errorCode(outputs, to: connection))
            if errorCode(outputs, to: connection) == nil {
                _ = room.sequencer.uploadFinished(connection, verified: true, now: 2)
                stored += 1
            }
            _ = room.sequencer.disconnected(connection, now: 2)
        }
        // One /64: two uploads fit its 2500 bytes, the third does not.
        #expect(stored == 2, "\(codes)")
        #expect(codes.last == "quota-exceeded")
        let (alice, outputs) = room.upload("alice", id: Self.id(9), size: 1000, room: "home")
        #expect(errorCode(outputs, to: alice) == nil)
        // Detaching frees the address's bytes.
        let detach = room.sequencer.received(.detach(id: 1, attachment: Self.id(1)), from: 1, now: 3)
        #expect(detach.contains(.deleteStored(Self.id(1))))
        #expect(room.sequencer.journal.bytes(from: "2001:db8:6:6::/64") == 1000)
    }

    @Test("one address takes at most maxTransfersPerAddress transfer slots; others still get one")
    func transfersPerAddress() {
        var configuration = configuration()
        configuration.journal.maxTransfersPerAddress = 3
        configuration.maxMembersPerAddress = 64
        var room = Room(sequencer: RoomSequencer(configuration: configuration))
        for n in 1...5 { room.join("x\(n)", from: "203.0.113.9", id: n) }
        room.join("alice", from: "198.51.100.1", id: 50)
        let codes = (1...5).map { n -> String? in
            let (connection, outputs) = room.upload("x\(n)", id: Self.id(n), size: 100)
            return errorCode(outputs, to: connection)
        }
        #expect(codes == [nil, nil, nil, "rate-limited", "rate-limited"])
        let (alice, outputs) = room.upload("alice", id: Self.id(9), size: 100)
        #expect(errorCode(outputs, to: alice) == nil)
    }

    @Test("someone else's partial bytes are never resumed; one's own are")
    func noPoisonedResume() {
        var room = Room(sequencer: RoomSequencer(configuration: configuration()))
        room.join("alice", from: "198.51.100.1", id: 1)
        room.join("eve", from: "203.0.113.9", id: 2)
        let (eve, _) = room.upload("eve", id: Self.id(1), size: 1000)
        room.sequencer.uploadInterrupted(eve, received: 600)
        _ = room.sequencer.disconnected(eve, now: 2)
        let (alice, outputs) = room.upload("alice", id: Self.id(1), size: 1000)
        #expect(outputs == [.receiveUpload(alice, id: Self.id(1), size: 1000, resume: false)])
        room.sequencer.uploadInterrupted(alice, received: 300)
        _ = room.sequencer.disconnected(alice, now: 3)
        let (again, resumed) = room.upload("alice", id: Self.id(1), size: 1000)
        #expect(resumed == [.receiveUpload(again, id: Self.id(1), size: 1000, resume: true)])
    }

    @Test("a transfer must move its minimum in every window; bursts within a window count")
    func transferProgress() {
        var progress = TransferWindow(start: 0)
        progress.moved(70_000)
        do { let slow = progress.isTooSlow(now: 29, window: 30, minimum: 65_536); #expect(!slow) }
        do { let slow = progress.isTooSlow(now: 30, window: 30, minimum: 65_536); #expect(!slow) }
        // A byte now and then: the next window is too slow.
        for t in stride(from: 31.0, to: 60, by: 5) { progress.moved(1) }
        do { let slow = progress.isTooSlow(now: 59, window: 30, minimum: 65_536); #expect(!slow) }
        do { let slow = progress.isTooSlow(now: 60, window: 30, minimum: 65_536); #expect(slow) }
    }
}
