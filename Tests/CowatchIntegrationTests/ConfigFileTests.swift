import CowatchTestSupport
import Foundation
import Testing

/// What `cowatchd` says about a config file it cannot use: one line naming the file and the
/// problem, exit status 2 (an edit is needed, not a retry). These stop before any media opens.
@Suite("config file errors", .realProcesses)
struct ConfigFileTests {
    func daemon(withConfig text: String) async throws -> (Finished, path: String) {
        let directory = try makeTemporaryDirectory("cowatch-config")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/cowatchd.json"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        let result = try await runBinary(
            "cowatchd", ["--config", path, "--mpv", "vo=null", "--mpv", "ao=null", "--control", directory + "/c.sock"])
        return (result, path)
    }

    @Test("not JSON: the file, the line and column, what was expected; no Foundation error dump")
    func notJSON() async throws {
        let (result, path) = try await daemon(withConfig: "{\n  \"media\": \"night.mkv\",\n  \"paused\": tru\n}\n")
        #expect(result.status == 2)
        #expect(
            result.stderr == "cowatchd: config file \(path) is not valid JSON: line 3, column 13: expected a value "
                + "(a string in double quotes, a number, true, false, null, [ or {), found 'tru'\n",
            "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
        #expect(result.stderr.split(separator: "\n").count == 1)

        let (comma, _) = try await daemon(withConfig: "{\"media\": \"night.mkv\",\n}")
        #expect(comma.stderr.contains("line 2, column 1: expected a key in double quotes, found '}'"), "\(comma.stderr)")
    }

    @Test("valid JSON that is not an object, and a named file that does not exist")
    func notAnObject() async throws {
        let (array, path) = try await daemon(withConfig: "[\"night.mkv\"]")
        #expect(array.status == 2)
        #expect(array.stderr.contains("config file \(path) must hold one JSON object"), "\(array.stderr)")
        let missing = try await runBinary("cowatchd", ["--config", "/nonexistent/cowatchd.json"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "cowatchd: config file /nonexistent/cowatchd.json does not exist\n", "\(missing.stderr)")
    }

    @Test("flat drift keys are read like nested ones; both at once, or a misspelt one, are refused")
    func flatDriftKeys() async throws {
        // Out of range, so the daemon stops at once and says so: proof that the key was read.
        let base = "\"media\": \"/nonexistent/film.mkv\", \"join\": \"127.0.0.1:9\", \"no-tls\": true"
        let (flat, _) = try await daemon(withConfig: "{\(base), \"drift.max-adjust\": 0.7}")
        #expect(flat.status == 2)
        #expect(flat.stderr.contains("drift.max-adjust must be below 0.5"), "\(flat.stderr)")
        let (nested, _) = try await daemon(withConfig: "{\(base), \"drift\": {\"max-adjust\": 0.7}}")
        #expect(nested.stderr.contains("drift.max-adjust must be below 0.5"), "\(nested.stderr)")

        let (both, _) = try await daemon(withConfig: "{\(base), \"drift.max-adjust\": 0.03, \"drift\": {\"max-adjust\": 0.04}}")
        #expect(both.status == 2)
        #expect(both.stderr.contains("drift.max-adjust is given twice"), "\(both.stderr)")
        let (misspelt, _) = try await daemon(withConfig: "{\(base), \"drift.max-adjus\": 0.03}")
        #expect(misspelt.status == 2)
        #expect(misspelt.stderr.contains("unknown key \"drift.max-adjus\""), "\(misspelt.stderr)")
    }
}
