import CowatchCore

/// In-process reading of the secret verifiers (salt and scrypt key) a running `RoomServer` keeps
/// for its rooms: what its sequencer holds, loaded from `rooms.json` at start and, in a cluster,
/// adopted from the directory when a room comes here (before its first hello is challenged). For
/// `cowatch-server --syncplay-secret-rooms`, whose Syncplay gateway proves a room's secret for a
/// client that gave the Syncplay password. The key never leaves the process: it is not logged,
/// and nothing sends it anywhere.
///
/// Threading: any task; `verifier(of:)` waits for the server's rooms actor. Before the server
/// runs, and after it stopped, every answer is nil.
public final class RoomVerifiers: Sendable {
    private let hub = Locked<RoomHub?>(nil)

    public init() {}

    /// The verifier kept for `room`; nil for a room without a secret, or one this server does not hold.
    public func verifier(of room: String) async -> RoomVerifier? {
        guard let hub = hub.withLock({ $0 }) else { return nil }
        return await hub.storedVerifier(of: room)
    }

    func attach(_ hub: RoomHub?) {
        self.hub.withLock { $0 = hub }
    }
}

extension RoomHub {
    /// The verifier of `room`'s secret, as the sequencer checks proofs against it.
    func storedVerifier(of room: String) -> RoomVerifier? { sequencer.records[room]?.verifier }
}
