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
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(listening)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(client) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
        }
        try #require(connected)
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
