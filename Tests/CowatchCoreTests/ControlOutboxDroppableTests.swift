import Testing

@testable import CowatchCore

/// A local client that reads slowly during a peer's unreliable stream (issue 22, item 7): the
/// stream's events are the ones it loses, never a reliable message's.
@Suite("Control outbox: unreliable events have their own allowance")
struct ControlOutboxDroppableTests {
    @Test("2000 unreliable events around 10 reliable ones while the client does not read: all 10 reliable ones wait for it, and 64 unreliable ones at most")
    func reliableSurvivesStream() async {
        let outbox = ControlOutbox<String>()
        for index in 0..<2000 {
            outbox.pushEvent("u\(index)", droppable: true)
            if index % 200 == 100 { outbox.pushEvent("r\(index / 200)") }
        }
        #expect(outbox.counts.events <= 10 + 64)
        outbox.finish()
        var out: [String] = []
        while let message = await outbox.next() { out.append(message) }
        #expect(out.filter { $0.hasPrefix("r") } == (0..<10).map { "r\($0)" })
        #expect(out.filter { $0.hasPrefix("u") }.count <= 64)
    }

    @Test("at the event limit a droppable event makes room before any other; a droppable one is dropped itself")
    func droppableGoesFirst() async {
        let outbox = ControlOutbox<String>(eventLimit: 4, replyLimit: 2, droppableLimit: 2)
        outbox.pushEvent("a")
        outbox.pushEvent("u1", droppable: true)
        outbox.pushEvent("b")
        outbox.pushEvent("u2", droppable: true)
        outbox.pushEvent("u3", droppable: true)  // over the droppable allowance: dropped
        outbox.pushEvent("c")  // full: u1 makes room
        outbox.pushEvent("d")  // full: u2 makes room
        outbox.pushEvent("e")  // full, no droppable left: the oldest (a) goes
        #expect(outbox.counts.droppedEvents == 4)
        outbox.finish()
        var out: [String] = []
        while let message = await outbox.next() { out.append(message) }
        #expect(out == ["b", "c", "d", "e"])
    }
}
