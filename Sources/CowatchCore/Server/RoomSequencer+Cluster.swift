/// What a cluster's shell needs to know of the rooms hosted here (see `RoomLeases`).
extension RoomSequencer {
    /// The rooms with members now.
    public var liveRooms: Set<String> { Set(rooms.keys) }

    /// The rooms with members now, or with a hello still in its handshake. A claim must hold
    /// while its first hello is on its way in: the challenge and the daemon's key derivation can
    /// outlast a short lease's empty grace on a busy machine, and a claim released then would
    /// let that hello join a room the directory no longer names, while the next daemon claims
    /// the room on another server and the group stays split.
    public var roomsInUse: Set<String> {
        liveRooms.union(handshakes.values.map(\.hello.room))
    }

    /// The connections in `room` (joined ones and those still in their handshake), to evict
    /// when the room moved away.
    public func connections(in room: String) -> [ConnectionID] {
        (joined.filter { $0.value.room == room }.map(\.key) + handshakes.filter { $0.value.hello.room == room }.map(\.key)).sorted()
    }
}
