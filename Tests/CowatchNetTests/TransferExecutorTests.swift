@testable import CowatchNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The transfer thread: bulk bytes at a lower priority than playback")
struct TransferExecutorTests {
    @Test("the transfer thread runs at nice 19, and work preferring it runs there")
    func lowPriority() async throws {
        #expect(try await TransferExecutor.shared.niceness() == 19)
        let seen = await withTaskExecutorPreference(TransferExecutor.shared) {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }
        #expect(seen == 19)
    }
}
