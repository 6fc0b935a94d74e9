import CowatchCore
import NIOCore
import NIOPosix

/// Talking to a gateway: a UDP request answered by one datagram (NAT-PMP, PCP, SSDP) and an
/// HTTP request on a fresh TCP connection (UPnP). Everything is bounded: reply sizes, attempts,
/// and a deadline on every wait.
///
/// Threading: any task. Errors: `io-error` when a socket cannot be opened; no answer is `nil`,
/// not an error.
enum GatewayExchange {
    /// A datagram larger than this is dropped unread (NAT-PMP and PCP replies fit in 1 100 bytes,
    /// SSDP replies in 2 048).
    static let maxDatagram = 2048
    /// An HTTP response larger than this is given up on.
    static let maxHTTPResponse = 64 * 1024

    /// Sends `request` to `host:port` (unicast or multicast) and returns the first reply that
    /// `accept` takes, with the sender's address; the request is sent again after each of
    /// `waits` (seconds) without an accepted reply, RFC 6886 style; nil when none came.
    static func datagram(
        _ request: [UInt8], to host: String, port: Int, waits: [Double],
        accept: @escaping @Sendable (_ reply: [UInt8], _ sender: String) -> Bool
    ) async throws -> (reply: [UInt8], sender: String)? {
        let target: SocketAddress
        do {
            target = try SocketAddress(ipAddress: host, port: port)
        } catch {
            throw CowatchError(.ioError, "\(host) is not an address to send to")
        }
        let channel: NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
        do {
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.maxMessagesPerRead, value: 4)
                .bind(host: target.protocol == .inet6 ? "::" : "0.0.0.0", port: 0) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(
                            wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CowatchError(.ioError, "cannot open a UDP socket: \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: (reply: [UInt8], sender: String)?.self) { group in
                group.addTask {
                    for try await envelope in inbound {
                        guard envelope.data.readableBytes <= maxDatagram, let sender = envelope.remoteAddress.ipAddress else { continue }
                        let bytes = Array(envelope.data.readableBytesView)
                        if accept(bytes, sender) { return (bytes, sender) }
                    }
                    return nil
                }
                group.addTask {
                    for wait in waits {
                        try await outbound.write(AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: request)))
                        try await Task.sleep(for: .milliseconds(Int(wait * 1000)))
                    }
                    return nil
                }
                defer { group.cancelAll() }
                // The first to finish: a reply, or the last wait run out.
                return try await group.next() ?? nil
            }
        }
    }

    /// Sends an HTTP request over a new TCP connection and returns the response's bytes once
    /// `isComplete` says so or the server closes; nil when nothing could be read in `deadline`
    /// seconds. Errors: `io-error` when the connection cannot be made, `too-large` past
    /// `maxHTTPResponse`.
    static func http(
        _ request: [UInt8], host: String, port: Int, deadline: Double, isComplete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws -> [UInt8]? {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(Int64(deadline * 1000)))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CowatchError(.ioError, "cannot connect to \(Invite.authority(host: host, port: port)): \(RoomConnection.describeConnectFailure(error))")
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask {
                    try await outbound.write(ByteBuffer(bytes: request))
                    var received: [UInt8] = []
                    for try await chunk in inbound {
                        received += chunk.readableBytesView
                        guard received.count <= maxHTTPResponse else {
                            throw CowatchError(.tooLarge, "the gateway's answer is over \(maxHTTPResponse / 1024) KiB")
                        }
                        if isComplete(received) { return received }
                    }
                    return received
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int(deadline * 1000)))
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
        }
    }
}
