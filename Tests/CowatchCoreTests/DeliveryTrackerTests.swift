import Testing

@testable import CowatchCore

/// A reliable message is acknowledged once its copies are written, naming only those reached.
@Suite("Delivery receipts")
struct DeliveryTrackerTests {
    typealias Receipt = RoomSequencer.DeliveryReceipt

    @Test("the acknowledgement waits for every recipient's write and names them in the room's order")
    func waitsForEveryWrite() {
        var tracker = RoomSequencer.DeliveryTracker()
        let (token, due) = tracker.expect(Receipt(sender: 1, messageID: 7, recipients: [(2, "bob"), (3, "carol")]))
        #expect(due.isEmpty)
        #expect(tracker.written(token, to: 3) == nil)
        #expect(tracker.written(token, to: 3) == nil)  // a second report changes nothing
        let ack = tracker.written(token, to: 2)
        #expect(ack?.0 == 1)
        #expect(ack?.1 == .messageAck(id: 7, delivered: ["bob", "carol"]))
        #expect(tracker.count == 0)
        #expect(tracker.written(token, to: 2) == nil)
    }

    @Test("a recipient that ends before its write is not named; a sender that ends gets nothing")
    func connectionsThatEnd() {
        var tracker = RoomSequencer.DeliveryTracker()
        let first = tracker.expect(Receipt(sender: 1, messageID: 1, recipients: [(2, "bob"), (3, "carol")])).token
        let second = tracker.expect(Receipt(sender: 2, messageID: 5, recipients: [(1, "alice")])).token
        #expect(tracker.written(first, to: 2) == nil)
        let due = tracker.ended(3)
        #expect(due.count == 1)
        #expect(due.first?.0 == 1)
        #expect(due.first?.1 == .messageAck(id: 1, delivered: ["bob"]))
        // bob, the sender of the second, leaves: nobody is left to answer.
        #expect(tracker.ended(2).isEmpty)
        #expect(tracker.written(second, to: 1) == nil)
        #expect(tracker.count == 0)
    }

    @Test("nobody to reach: acknowledged at once, with nobody")
    func noRecipients() {
        var tracker = RoomSequencer.DeliveryTracker()
        let due = tracker.expect(Receipt(sender: 4, messageID: 2, recipients: [])).due
        #expect(due.count == 1)
        #expect(due.first?.1 == .messageAck(id: 2, delivered: []))
        #expect(tracker.count == 0)
    }
}
