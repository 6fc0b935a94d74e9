import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// A participant of a real Syncplay server made of Cowatch's own protocol code: a TCP socket,
/// Syncplay's line framing, `SyncplayCodec` and the `SyncplayClient` machine, with an ideal
/// player that is wherever the room's timeline says. It carries out the machine's actions and
/// keeps what it was told, for the test to read.
///
/// Threading: one test task; the blocking reads run off the pool (`offPool`).
final class SyncplayTestPeer {
    private(set) var machine: SyncplayClient
    private let fd: Int32
    private var framer = LineFramer(maxLineBytes: SyncplayCodec.maxLineBytes)
    private(set) var notices: [SyncplayNotice] = []
    private(set) var chats: [(from: String, message: String)] = []
    private(set) var failure: CowatchError?
    private(set) var motd: String?
    private(set) var saidPlaintext = false
    private(set) var users: [SyncplayListedUser] = []
    /// Lines the peer could not decode.
    private(set) var badLines: [CowatchError] = []
    /// The managed room the server made for us, and its password.
    private(set) var managed: (room: String, password: String)?

    init(port: Int, _ configuration: SyncplayClient.Configuration) throws {
        machine = SyncplayClient(configuration: configuration)
        guard let fd = LoopbackSocket.connect(port: port) else {
            throw TestFailure("cannot connect to the Syncplay server on port \(port)")
        }
        self.fd = fd
        try perform(machine.connected(now: monotonicNow()))
    }

    deinit { close(fd) }

    /// Where the ideal player is: on the room's timeline (at 0, paused, before it has one).
    var player: SyncplayClient.PlayerReading {
        let now = monotonicNow()
        return SyncplayClient.PlayerReading(position: machine.roomPosition(at: now) ?? 0, paused: machine.timeline?.paused ?? true)
    }

    /// This viewer paused, played or sought.
    func change(paused: Bool, position: Double, seek: Bool = false) throws {
        try perform(machine.localChange(paused: paused, position: position, seek: seek, now: monotonicNow()))
    }

    func chat(_ text: String) throws { try perform(try machine.chat(text)) }

    func manage(password: String) throws { try perform(try machine.manage(password: password)) }

    /// Reads and handles the server's lines until `condition` holds or `timeout` passes; true
    /// when it held.
    @discardableResult
    func pump(for timeout: Double, until condition: (SyncplayTestPeer) -> Bool = { _ in false }) async throws -> Bool {
        let deadline = monotonicNow() + timeout
        while !condition(self) {
            let left = deadline - monotonicNow()
            guard left > 0, failure == nil else { return condition(self) }
            let fd = fd
            let bytes = await offPool { () -> [UInt8]? in
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, Int32(min(left, 0.2) * 1000)) > 0 else { return [] }
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let count = recv(fd, &buffer, buffer.count, 0)
                return count > 0 ? Array(buffer[0..<count]) : nil
            }
            guard let bytes else {
                failure = failure ?? CowatchError(.ioError, "the Syncplay server closed the connection")
                return condition(self)
            }
            for item in framer.feed(bytes) {
                guard case .line(let line) = item else { continue }
                do {
                    let commands = try SyncplayCodec.decode(line: line)
                    try perform(machine.received(commands, player: player, now: monotonicNow()))
                } catch let error as CowatchError {
                    badLines.append(error)
                    try perform(machine.receivedBadLine(error))
                }
            }
            try perform(machine.tick(now: monotonicNow()))
        }
        return true
    }

    private func perform(_ actions: [SyncplayClient.Action]) throws {
        for action in actions {
            switch action {
            case .send(let commands):
                let line = SyncplayCodec.encode(commands)
                let sent = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent == line.count else { throw TestFailure("could not send to the Syncplay server") }
            case .startTLS:
                throw TestFailure("this test peer speaks plaintext only")
            case .plaintext:
                saidPlaintext = true
            case .joined(_, _, let motd):
                self.motd = motd
            case .follow:
                break  // the ideal player is the timeline itself
            case .notice(let notice):
                notices.append(notice)
            case .users(let users):
                self.users = users
            case .chat(let from, let message):
                chats.append((from, message))
            case .playlist, .playlistIndex:
                break
            case .managedRoomCreated(let room, let password):
                managed = (room, password)
            case .fail(let error):
                failure = error
            }
        }
    }
}
