/// A `HOST:PORT` (or `[v6]:PORT`, or just `PORT` when a default host is given) as people type it.
public struct Endpoint: Sendable, Hashable {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses the text; throws `invalid-configuration` naming what was expected.
    public init(parsing text: String, defaultHost: String?) throws(CowatchError) {
        var host = defaultHost ?? ""
        var portText = text
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw CowatchError(.invalidConfiguration, "\"\(text)\" must look like \(defaultHost == nil ? "HOST:PORT" : "[ADDR:]PORT")")
        }
        self.init(host: host, port: port)
    }
}
