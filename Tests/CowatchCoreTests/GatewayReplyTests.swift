import CowatchCore
import Testing

/// Replies captured from a real miniupnpd 2.3.1 whose outside address is 100.64.0.1
/// (carrier-grade NAT): what the port mapper reads from them.
@Suite("Gateway replies from a router behind carrier-grade NAT")
struct GatewayReplyTests {
    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    @Test("PCP's refusal names the router's outside address, which is carrier-grade NAT")
    func pcpRefusalCarriesAddress() throws {
        let reply = Self.bytes(
            "028100080000001e0000001c000000000000000000000000b640f4d9107aa37b79e7612d060000001d091d0900000000000000000000ffff64400001")
        #expect(try PCP.parse(reply) == .failure(opcode: 1, result: .noResources))
        let outside = try #require(PCP.failureExternalAddress(reply))
        #expect(outside.description == "100.64.0.1")
        #expect(outside.isCarrierGradeNAT)
        // A success, a short reply or an unspecified address carries nothing.
        #expect(PCP.failureExternalAddress(Array(reply.prefix(24))) == nil)
        var echoed = reply
        for index in 44..<60 { echoed[index] = 0 }
        #expect(PCP.failureExternalAddress(echoed) == nil)
        var success = reply
        success[3] = 0
        #expect(PCP.failureExternalAddress(success) == nil)
    }

    @Test("NAT-PMP's address request is answered with a network failure")
    func natpmpNetworkFailure() throws {
        #expect(try NATPMP.parse(Self.bytes("008000030000001c00000000")) == .failure(opcode: 128, result: .networkFailure))
    }
}
