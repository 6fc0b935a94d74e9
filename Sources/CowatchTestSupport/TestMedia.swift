import CowatchObserver
import Foundation

/// Real media files made with ffmpeg, cached under /tmp so a test run makes each once.
public enum TestMedia {
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

    private static let lock = NSLock()

    private static func make(name: String, arguments: [String]) throws -> String {
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
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("ffmpeg failed (\(process.terminationStatus)); is ffmpeg installed? `make deps` installs it")
        }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        return path
    }
}
