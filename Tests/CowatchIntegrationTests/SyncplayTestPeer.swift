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
    /// -1 once `drop` closed it.
    private var fd: Int32
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

    /// Connects to 127.0.0.1:`port`, from loopback address `source` when given (another address
    /// of 127/8, so the server sees another client address).
    init(port: Int, from source: String? = nil, _ configuration: SyncplayClient.Configuration) throws {
        machine = SyncplayClient(configuration: configuration)
        guard let fd = source.map({ Self.connect(port: port, from: $0) }) ?? LoopbackSocket.connect(port: port) else {
            throw TestFailure("cannot connect to the Syncplay server on port \(port)")
        }
        self.fd = fd
        try perform(machine.connected(now: monotonicNow()))
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The connection dropped abruptly: a reset, no goodbye (as a blip on the client's network
    /// or a killed client would leave it).
    func drop() {
        guard fd >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
        fd = -1
    }

    /// Sends `commands` as one line, past the machine (what a stock client says that the
    /// machine would not, e.g. a claim of control the server does not offer).
    func sendRaw(_ commands: [SyncplayCommand]) throws {
        try perform([.send(commands)])
    }

    /// A socket bound to `source` and connected to 127.0.0.1:`port`; nil when that fails.
    private static func connect(port: Int, from source: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else {
            close(fd)
            return nil
        }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(port).bigEndian)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 } }
        let connected = bound && withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

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
            guard left > 0, failure == nil, fd >= 0 else { return condition(self) }
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
