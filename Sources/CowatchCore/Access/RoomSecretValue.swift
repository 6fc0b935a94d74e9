/// A room secret held in memory: compares like its text, never prints it.
///
/// `description`, `debugDescription`, `dump` and string interpolation all show "…", so a
/// configuration or a settings value that holds one can be logged or printed in a test failure
/// without leaking it. Only `text` gives the secret, for `RoomCoordinator(secret:)`.
///
/// Threading: a value type, safe to share.
public struct RoomSecretValue: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret itself. Never log it.
    public let text: String

    /// Checks the secret (`RoomSecret.validate`: 8–1024 bytes, no control characters).
    /// Errors: `invalid-configuration`, with a message that does not contain the secret.
    public init(_ text: String) throws(CowatchError) {
        try RoomSecret.validate(text)
        self.text = text
    }

    public var description: String { "…" }
    public var debugDescription: String { "RoomSecretValue(…)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
