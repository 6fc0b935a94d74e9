import CowatchCore

/// How this daemon takes part in a room. Threading: a value type.
public struct RoomSettings: Sendable, Equatable {
    /// The room's name. Default "cowatch".
    public var room: String
    /// The room server to join.
    public var serverHost: String
    public var serverPort: Int
    /// When set, this daemon also runs the room server, listening here (`--host [ADDR:]PORT`).
    public var hostAddress: String?
    public var hostPort: Int?
    /// Drift correction: thresholds and gains (see `DriftController.Configuration`).
    public var drift: DriftController.Configuration
    /// Seconds between drift checks. Default 0.05 s.
    public var tickInterval: Double

    public init(
        room: String, serverHost: String, serverPort: Int, hostAddress: String? = nil, hostPort: Int? = nil,
        drift: DriftController.Configuration = .init(), tickInterval: Double = 0.05
    ) {
        self.room = room
        self.serverHost = serverHost
        self.serverPort = serverPort
        self.hostAddress = hostAddress
        self.hostPort = hostPort
        self.drift = drift
        self.tickInterval = tickInterval
    }

    /// Parses `HOST:PORT` (or `[v6]:PORT`). Throws `invalid-configuration`.
    public static func endpoint(_ text: String, defaultHost: String?) throws(CowatchError) -> (host: String, port: Int) {
        var host = defaultHost ?? ""
        var portText = text
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw CowatchError(.invalidConfiguration, "\"\(text)\" must look like HOST:PORT")
        }
        return (host, port)
    }
}
