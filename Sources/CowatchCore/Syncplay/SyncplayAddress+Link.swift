extension SyncplayAddress {
    /// The link again, `syncplay://HOST[:PORT]/ROOM`, as `init(parsing:)` reads it: the port
    /// only when it is not Syncplay's, the room with `%`, spaces, `/`, `?`, `#` and anything
    /// outside printable ASCII percent-encoded (`+` and `:` of a managed room stay as they are).
    public var link: String {
        let authority = port == Self.defaultPort ? (host.contains(":") ? "[\(host)]" : host) : Invite.authority(host: host, port: port)
        var path = ""
        for byte in room.utf8 {
            let keep = byte > 0x20 && byte < 0x7f && !"%/?#".utf8.contains(byte)
            path += keep ? String(UnicodeScalar(byte)) : "%" + Hex.encode([byte]).uppercased()
        }
        return "\(Self.scheme)://\(authority)/\(path)"
    }
}
