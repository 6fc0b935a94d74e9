import CowatchObserver
import Foundation

/// Real media files made with ffmpeg, cached under /tmp so a test run makes each once.
///
/// `audioVideo()` and `videoOnly()` block while ffmpeg makes the file (or while another caller
/// does); `file(_:)` is the same suspending the task instead (see `offPool`). Not the same names:
/// `cowatch-bench` calls those from an async function of its own.
public enum TestMedia {
    public enum Kind: Sendable {
        /// `audioVideo()`'s film.
        case audioVideo
        /// `videoOnly()`'s film.
        case videoOnly
        /// `streamFilm()`'s 200 MB film.
        case stream
    }

    /// The film of this kind, made (on a thread of its own) if it is not there yet.
    public static func file(_ kind: Kind) async throws -> String {
        try await offPool {
            switch kind {
            case .audioVideo: try audioVideo()
            case .videoOnly: try videoOnly()
            case .stream: try streamFilm()
            }
        }
    }

    /// 25 fps 160x90 test pattern with a 440 Hz tone, 75 s, a keyframe every second: seekable both ways.
    public static func audioVideo() throws -> String {
        try make(
            name: "av-75s.mkv",
            arguments: [
                "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=75",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=75",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-c:a", "aac", "-shortest",
            ])
    }

    /// The same picture without audio.
    public static func videoOnly() throws -> String {
        try make(
            name: "v-75s.mkv",
            arguments: [
                "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=75",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "25",
            ])
    }

    /// A film of about 200 MB for the stream tests: 80 s of 640x360 at 25 fps, H.264 held at a
    /// constant 20 Mbit/s (filler fills what the test pattern does not need) and AAC, a keyframe
    /// every second: what a real film's bitrate asks of a link, cheap to decode.
    public static func streamFilm() throws -> String {
        try make(
            name: "stream-200mb.mkv",
            arguments: [
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=80",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=80",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-b:v", "20M", "-minrate", "20M", "-maxrate", "20M",
                "-bufsize", "2M", "-x264-params", "nal-hrd=cbr", "-c:a", "aac", "-shortest",
                // One encoding thread: made while other suites run, it leaves them a core.
                "-threads", "1",
            ])
    }

    private static let lock = NSLock()

    /// Makes `/tmp/cowatch-test-media/NAME` with ffmpeg `arguments` unless it is there; its path.
    static func make(name: String, arguments: [String]) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        let directory = "/tmp/cowatch-test-media"
        let path = "\(directory)/\(name)"
        if FileManager.default.fileExists(atPath: path) { return path }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let partial = path + ".part.\(getpid()).mkv"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"] + arguments + [partial]
        try process.runSerially()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("ffmpeg failed (\(process.terminationStatus)); is ffmpeg installed? `make deps` installs it")
        }
        do {
            try FileManager.default.moveItem(atPath: partial, toPath: path)
        } catch {
            // Another test process made it meanwhile: theirs is the same film.
            try? FileManager.default.removeItem(atPath: partial)
            guard FileManager.default.fileExists(atPath: path) else { throw error }
        }
        return path
    }
}
