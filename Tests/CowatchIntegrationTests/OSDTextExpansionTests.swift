import CowatchClient
import CowatchCore
import CowatchTestSupport
import Testing

/// `OSDText.escaped` against real mpv: `show-text` expands its argument exactly as the
/// `expand-text` command does, so text escaped once must come back from `expand-text` unchanged.
@Suite("OSD text against mpv's property expansion", .serialized)
struct OSDTextExpansionTests {
    static let texts = [
        "bob paused at 0:01:33",
        "alice opened Ca$h Flow",
        "${pause} ${time-pos} ${=speed}",
        "$$ is one dollar in mpv",
        "$>no expansion ${pause}",
        "brace $} and a lone $",
        "ends with $",
    ]

    @Test("text escaped once is shown exactly as written; unescaped or escaped twice it is not")
    func expandsBack() throws {
        let daemon = try DaemonProcess(name: "osd", media: try TestMedia.audioVideo(), extraArguments: ["--paused"])
        let mpv = try daemon.playerProbe()
        func expand(_ text: String) throws -> String? {
            try mpv.request([.string("expand-text"), .string(text)]).stringValue
        }
        for text in Self.texts {
            #expect(try expand(OSDText.escaped(text)) == text)
        }
        // The test can tell: mpv does expand unescaped text, and shows "$$" when escaped twice.
        #expect(try expand("${pause}") == "yes")
        #expect(try expand(OSDText.escaped(OSDText.escaped("Ca$h"))) == "Ca$$h")
        #expect(daemon.terminate() == 0)
    }
}
