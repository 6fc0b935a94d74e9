/// Which rooms with a secret a `cowatch-server`'s Syncplay gateway may let Syncplay clients into
/// (`--syncplay-secret-rooms`): none (the default), every room, or the rooms named. A client gets
/// in only with the gateway's Syncplay password; the gateway then proves the room's secret for it
/// with the verifier key the server keeps (see `SyncplayGuest`).
///
/// Threading: a value type. Errors: `parse` throws `invalid-configuration`.
public enum SyncplaySecretRooms: Sendable, Equatable {
    case none
    case all
    case named(Set<String>)

    /// The most rooms one flag may name.
    public static let maxNamed = 256

    /// May a Syncplay client with the gateway's password be let into `room`, which has a secret?
    public func admits(_ room: String) -> Bool {
        switch self {
        case .none: false
        case .all: true
        case .named(let rooms): rooms.contains(room)
        }
    }

    /// The flag's value: `all`, or room names separated by commas (each a valid room name).
    public static func parse(_ text: String) throws(CowatchError) -> SyncplaySecretRooms {
        if text == "all" { return .all }
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !names.isEmpty, names.count <= maxNamed else {
            throw CowatchError(.invalidConfiguration, "name at most \(maxNamed) rooms, separated by commas, or say all")
        }
        for name in names where !RoomName.isValid(name) {
            throw CowatchError(.invalidConfiguration, "\"\(name.prefix(64))\" is not a room name (1-64 letters, digits, '.', '_' or '-')")
        }
        return .named(Set(names))
    }
}
