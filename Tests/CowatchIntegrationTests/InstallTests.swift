import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// `make install` and `make uninstall` into a DESTDIR, with the programs this test run already
/// built (`BUILD_DIR`): the same rules as a release install, without minutes of release build.
@Suite("make install", .realProcesses)
struct InstallTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    func make(_ arguments: [String]) async throws -> Finished {
        // Not the jobserver of a `make test` around us.
        try await run(
            executable: "/usr/bin/env", ["make", "--no-print-directory"] + arguments,
            environment: ["MAKEFLAGS": "", "MAKELEVEL": "", "MFLAGS": ""], directory: Self.packageRoot)
    }

    @Test("installs programs, man pages, completions, units and examples under DESTDIR/PREFIX; uninstall removes them")
    func installAndUninstall() async throws {
        let destination = try makeTemporaryDirectory("cowatch-install")
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let common = ["DESTDIR=\(destination)", "PREFIX=/usr", "BUILD_DIR=\(Binaries.directory)"]
        let installed = try await make(["install"] + common)
        #expect(installed.status == 0, "\(installed.stdout)\(installed.stderr)")

        let root = destination + "/usr"
        let expected = [
            "bin/cowatchd", "bin/cowatch", "bin/cowatch-server",
            "share/man/man1/cowatchd.1", "share/man/man1/cowatch.1", "share/man/man1/cowatch-server.1",
            "share/man/man7/cowatch-protocol.7",
            "share/bash-completion/completions/cowatch", "share/zsh/site-functions/_cowatchd",
            "share/fish/vendor_completions.d/cowatch-server.fish",
            "lib/systemd/user/cowatchd@.service", "lib/systemd/system/cowatch-server.service",
            "share/doc/cowatch/cowatchd.json", "share/doc/cowatch/cowatchd.env", "share/doc/cowatch/README.md",
            "share/doc/cowatch/benchmarks.md",
        ]
        for file in expected {
            #expect(FileManager.default.fileExists(atPath: root + "/" + file), "missing \(file)")
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/bin/cowatch-bench"))
        let version = try await run(executable: root + "/bin/cowatch", ["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == CowatchVersion.text)
        // Completions come from the programs: they know the subcommands.
        let bash = try String(contentsOfFile: root + "/share/bash-completion/completions/cowatch", encoding: .utf8)
        #expect(bash.contains("participants") && bash.contains("wait-for-me"))
        // The units start the installed programs, not ~/.local/bin or /usr/local.
        let unit = try String(contentsOfFile: root + "/lib/systemd/user/cowatchd@.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/cowatchd --name %i"))
        let serverUnit = try String(contentsOfFile: root + "/lib/systemd/system/cowatch-server.service", encoding: .utf8)
        #expect(serverUnit.contains("ExecStart=/usr/bin/cowatch-server "))

        let removed = try await make(["uninstall"] + common)
        #expect(removed.status == 0, "\(removed.stdout)\(removed.stderr)")
        let left = FileManager.default.enumerator(atPath: root)?.compactMap { entry -> String? in
            let path = root + "/" + (entry as? String ?? "")
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue ? path : nil
        } ?? []
        #expect(left.isEmpty, "left behind: \(left)")
    }
}
