/// A measurement or a test set-up that could not be done: the sentence says what and, where it
/// helps, how to fix it ("is ffmpeg installed? `make deps` installs it").
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
