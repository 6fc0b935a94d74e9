import Testing

@testable import CowatchCore

@Suite("Control outbox: bounded events, held-up requests")
struct ControlOutboxTests {
    @Test("replies and events come out in the order they went in")
    func order() async {
        let outbox = ControlOutbox<String>()
        outbox.pushEvent("e1")
        outbox.pushReply("r1")
        outbox.pushEvent("e2")
        outbox.pushEvent("e3")
        outbox.pushReply("r2")
        outbox.finish()
        var out: [String] = []
        while let message = await outbox.next() { out.append(message) }
        #expect(out == ["e1", "r1", "e2", "e3", "r2"])
    }

    @Test("past the limit the oldest events are dropped; replies never are")
    func dropsOldestEvents() async {
        let outbox = ControlOutbox<String>(eventLimit: 4, replyLimit: 2)
        outbox.pushReply("r0")
        for index in 0..<10 { outbox.pushEvent("e\(index)") }
        outbox.pushReply("r1")
        outbox.pushReply("r2")
        outbox.pushReply("r3")  // over replyLimit: kept all the same
        #expect(outbox.counts.events == 4)
        #expect(outbox.counts.droppedEvents == 6)
        outbox.finish()
        outbox.pushEvent("late")  // ignored once finished
        var out: [String] = []
        while let message = await outbox.next() { out.append(message) }
        #expect(out == ["r0", "e6", "e7", "e8", "e9", "r1", "r2", "r3"])
    }

    @Test("the reader is held while replyLimit replies wait, and let go when the writer takes one")
    func holdsReader() async throws {
        let outbox = ControlOutbox<Int>(eventLimit: 8, replyLimit: 3)
        for index in 0..<3 { outbox.pushReply(index) }
        let released = Locked(false)
        let reader = Task {
            await outbox.awaitReplyRoom()
            released.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(released.withLock { $0 } == false)
        outbox.pushEvent(99)  // events do not make room
        try await Task.sleep(for: .milliseconds(50))
        #expect(released.withLock { $0 } == false)
        #expect(await outbox.next() == 0)
        await reader.value
        #expect(released.withLock { $0 })
        await outbox.awaitReplyRoom()  // room now: returns at once
    }

    @Test("the writer waits for a message and wakes on a push")
    func writerWaits() async throws {
        let outbox = ControlOutbox<String>()
        let writer = Task { await outbox.next() }
        try await Task.sleep(for: .milliseconds(50))
        outbox.pushEvent("hello")
        #expect(await writer.value == "hello")
    }

    @Test("cancel, or cancelling the waiting task, ends every wait")
    func cancellation() async throws {
        let outbox = ControlOutbox<Int>(eventLimit: 8, replyLimit: 1)
        outbox.pushReply(1)
        let reader = Task { await outbox.awaitReplyRoom() }
        let writerTask = Task {
            let other = ControlOutbox<Int>()
            return await other.next()
        }
        try await Task.sleep(for: .milliseconds(50))
        writerTask.cancel()
        #expect(await writerTask.value == nil)
        outbox.cancel()
        await reader.value
        #expect(await outbox.next() == nil)
        outbox.pushReply(2)
        #expect(await outbox.next() == nil)
    }
}
