/// What a scenario throws when the room did not do what it expects: the expectation, in words,
/// with what the room showed instead. Scenarios stop at the first one (later steps build on
/// earlier ones); a test framework reports it as the test's failure.
///
/// Threading: a value type, safe to share.
public struct ScenarioFailure: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    /// Throws `ScenarioFailure(message())` unless `condition` holds.
    public static func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(ScenarioFailure) {
        guard condition else { throw ScenarioFailure(message()) }
    }
}
