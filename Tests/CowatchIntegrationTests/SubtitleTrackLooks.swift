import CowatchClient
import CowatchCore
import CowatchTestSupport

extension ControlClient {
    /// The player's subtitle tracks (mpv's `track-list`, read through the daemon).
    func subtitleTracks() async throws -> [JSONValue] {
        (try await request(.getProperty("track-list")).arrayValue ?? []).filter { $0["type"] == "sub" }
    }

    /// The subtitle track titled `title`, once the player has one (polled every 0.2 s, suspended);
    /// nil after `seconds`.
    func subtitleTrack(titled title: String, within seconds: Double) async throws -> JSONValue? {
        let deadline = monotonicNow() + seconds
        while monotonicNow() < deadline {
            if let track = try await subtitleTracks().first(where: { $0["title"]?.stringValue == title }) { return track }
            await pause(0.2)
        }
        return nil
    }
}
