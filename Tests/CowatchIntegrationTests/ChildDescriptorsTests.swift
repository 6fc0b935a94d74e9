import CowatchTestSupport
import Foundation
import Testing

/// The test process's own descriptors reach no child but the one they are given to (see
/// ChildDescriptors.swift: a query's pipe that went to a daemon launched beside it stalled the
/// cluster test for minutes).
@Suite("Descriptors made for children", .realProcesses)
struct ChildDescriptorsTests {
    @Test("a child's pipe is close-on-exec here, and the child still writes through it")
    func pipeReachesItsChildOnly() async throws {
        let output = Pipe.forChild()
        for descriptor in [output.fileHandleForReading.fileDescriptor, output.fileHandleForWriting.fileDescriptor] {
            #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0)
        }
        let echo = Process()
        echo.executableURL = URL(fileURLWithPath: "/bin/echo")
        echo.arguments = ["through the pipe"]
        echo.standardOutput = output
        let exit = try echo.start()
        let text = await offPool { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        #expect(text == "through the pipe\n")
        #expect(await exit.wait(timeout: 10))
    }

    @Test("an accepted connection is close-on-exec; a listener shut down ends the wait with −1")
    func acceptedConnectionIsClosedOnExec() async throws {
        let (listener, port) = try LoopbackSocket.listen(what: "the test's listener")
        defer { close(listener) }
        let client = try #require(LoopbackSocket.connect(port: port))
        defer { close(client) }
        let accepted = await offPool { acceptClosedOnExec(listener) }
        #expect(accepted >= 0)
        #expect(fcntl(accepted, F_GETFD) & FD_CLOEXEC != 0)
        close(accepted)
        // Nobody else connects: shutting the listener down wakes the waiting accept.
        let waiting = Task { await offPool { acceptClosedOnExec(listener) } }
        await pause(0.2)
        shutdown(listener, Int32(SHUT_RDWR))
        #expect(await waiting.value == -1)
    }
}
