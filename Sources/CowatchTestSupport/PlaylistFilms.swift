import CowatchObserver
import Foundation

/// Three short films for the shared playlist's tests, made with ffmpeg and cached under /tmp
/// beside `TestMedia`'s, so a test run makes each once.
///
/// Each has audio and video and differs from the others in picture, tone and length, so no two
/// share an identity (size and fingerprint). The second is the longest: long enough for a late
/// joiner's daemon to start and arrive in its middle on a slow machine.
extension TestMedia {
    /// The films' lengths in seconds, in order.
    public static let playlistFilmSeconds: [Double] = [6, 12, 6]

    /// The three films' paths, in order, made (on a thread of their own) where not there yet.
    public static func playlistFilms() async throws -> [String] {
        try await offPool { try makePlaylistFilms() }
    }

    private static func makePlaylistFilms() throws -> [String] {
        let pictures = ["testsrc2", "smptebars", "rgbtestsrc"]
        let tones = [440, 660, 880]
        return try playlistFilmSeconds.indices.map { index in
            let seconds = Int(playlistFilmSeconds[index])
            return try make(
                name: "playlist-\(index + 1)-\(seconds)s.mkv",
                arguments: [
                    "-f", "lavfi", "-i", "\(pictures[index])=size=160x90:rate=25:duration=\(seconds)",
                    "-f", "lavfi", "-i", "sine=frequency=\(tones[index]):sample_rate=48000:duration=\(seconds)",
                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac", "-shortest",
                ])
        }
    }
}
