/// What a cluster's shell needs to know of the rooms hosted here (see `RoomLeases`).
extension RoomSequencer {
    /// The rooms with members now.
    public var liveRooms: Set<String> { Set(rooms.keys) }

    /// The connections in `room` (joined ones), to evict when the room moved away.
    public func connections(in room: String) -> [ConnectionID] {
        joined.filter { $0.value.room == room }.map(\.key).sorted()
    }
}
