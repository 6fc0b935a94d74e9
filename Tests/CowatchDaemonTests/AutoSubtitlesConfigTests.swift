import CowatchCore
import CowatchDaemon
import Testing

@Suite("--auto-subtitles: flag, environment, config file")
struct AutoSubtitlesConfigTests {
    static let environment = ["HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"]

    static func flags() -> DaemonFlags {
        var flags = DaemonFlags()
        flags.media = "night.mkv"
        flags.name = "alice"
        flags.control = "/tmp/cowatch-auto-subtitles-test.sock"
        return flags
    }

    @Test("on by default; COWATCH_AUTO_SUBTITLES turns it off; the flag wins over the environment")
    func sources() async throws {
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: Self.environment).autoSubtitles)
        var off = Self.environment
        off["COWATCH_AUTO_SUBTITLES"] = "false"
        #expect(try await !DaemonConfiguration.load(flags: Self.flags(), environment: off).autoSubtitles)
        var flags = Self.flags()
        flags.autoSubtitles = true
        #expect(try await DaemonConfiguration.load(flags: flags, environment: off).autoSubtitles)
        flags.autoSubtitles = false
        #expect(try await !DaemonConfiguration.load(flags: flags, environment: Self.environment).autoSubtitles)
    }

    @Test("--transfer-rate: sizes a second, 0 unlimited by default; nonsense is a configuration error")
    func transferRate() async throws {
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: Self.environment).transferRate == 0)
        var flags = Self.flags()
        flags.transferRate = "16M"
        #expect(try await DaemonConfiguration.load(flags: flags, environment: Self.environment).transferRate == 16_777_216)
        var environment = Self.environment
        environment["COWATCH_TRANSFER_RATE"] = "512K"
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: environment).transferRate == 524_288)
        flags.transferRate = "fast"
        await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: flags, environment: Self.environment) }
    }

    @Test("--player-nice: unset by default; environment, then flag; outside -20…19 or not a number is refused")
    func playerNice() async throws {
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: Self.environment).playerNice == nil)
        var environment = Self.environment
        environment["COWATCH_PLAYER_NICE"] = "-5"
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: environment).playerNice == -5)
        var flags = Self.flags()
        flags.playerNice = 3
        #expect(try await DaemonConfiguration.load(flags: flags, environment: environment).playerNice == 3)
        for bad in [-21, 20] {
            flags.playerNice = bad
            await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: flags, environment: Self.environment) }
        }
        environment["COWATCH_PLAYER_NICE"] = "first"
        await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: Self.flags(), environment: environment) }
    }

    @Test("--player-realtime: off by default; environment, then flag; outside 1…99 is refused")
    func playerRealtime() async throws {
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: Self.environment).playerRealtime == nil)
        var environment = Self.environment
        environment["COWATCH_PLAYER_REALTIME"] = "10"
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: environment).playerRealtime == 10)
        var flags = Self.flags()
        flags.playerRealtime = 3
        #expect(try await DaemonConfiguration.load(flags: flags, environment: environment).playerRealtime == 3)
        for bad in [0, 100] {
            flags.playerRealtime = bad
            await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: flags, environment: Self.environment) }
        }
    }
}
