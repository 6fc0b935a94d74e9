import CowatchTestSupport
import Foundation
import Testing

/// For a suite or test that computes for seconds without suspending (a clock simulation over
/// minutes of exchanges, fuzzing): its body runs on threads of its own (`DedicatedThreads`) at
/// nice 19, not on Swift's cooperative pool, which the in-process suites with real-time deadlines
/// need free (see `DedicatedThreads`), and not ahead of them for the cores: it takes what CPU they
/// leave. Everything here runs in the same test process as those suites.
struct ComputeBound: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// Once per test case: a suite's scope would put only its own setup there.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(Self.threads) { try await function() }
    }

    /// As many threads as cores, at the lowest priority.
    static let threads = DedicatedThreads(
        name: "compute-tests", threadCount: max(2, ProcessInfo.processInfo.activeProcessorCount), niceness: 19)
}

extension Trait where Self == ComputeBound {
    /// See `ComputeBound`.
    static var computeBound: Self { ComputeBound() }
}
