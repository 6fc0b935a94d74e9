import CowatchCore
import NIOCore

/// Counts the open sockets of each address (its `AddressIdentity` key) from the moment they are
/// accepted, and refuses one past `perAddress` before anything else is done with it: no TLS
/// handshake, no line decoder, no task (issue 22, item 3: a thousand idle sockets from one
/// address were each accepted and handed a TLS handshake before the per-address caps refused
/// them, too late to be cheap).
///
/// The room server's admission (`ServerAdmission`) still caps room connections per address with
/// a clear `server-busy` line; this gate counts every socket (transfers and streams as well, which
/// leave the admission after their first line), so its limit is higher, and its refusal is a
/// closed socket: a peer that holds that many sockets from one address is not a person.
///
/// Threading: any thread (a lock); `admit` is called from the channel initializer.
final class AcceptGate: Sendable {
    let perAddress: Int
    private let counts = Locked<[String: Int]>([:])

    init(perAddress: Int) {
        self.perAddress = perAddress
    }

    /// Counts `channel` until it closes, or refuses it: then it is closed as soon as it is
    /// active, and false is returned (the caller adds nothing to it).
    func admit(_ channel: any Channel) throws -> Bool {
        let key = AddressIdentity.key(of: channel.remoteAddress?.ipAddress ?? "unknown")
        let admitted = counts.withLock { counts -> Bool in
            guard counts[key, default: 0] < perAddress else { return false }
            counts[key, default: 0] += 1
            return true
        }
        guard admitted else {
            try channel.pipeline.syncOperations.addHandler(CloseOnActive())
            return false
        }
        channel.closeFuture.whenComplete { [counts] _ in
            counts.withLock { counts in
                counts[key, default: 1] -= 1
                if counts[key] == 0 { counts[key] = nil }
            }
        }
        return true
    }

    /// Sockets open from `address` (its key), for tests.
    func count(of address: String) -> Int { counts.withLock { $0[AddressIdentity.key(of: address)] ?? 0 } }
}

/// Closes its channel once active, reading nothing.
private final class CloseOnActive: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { context.close(promise: nil) }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.close(promise: nil)
    }
}
