import CowatchCore
import Testing

@Suite("JSON syntax errors with line and column")
struct JSONSyntaxTests {
    func problem(_ text: String) -> JSONSyntax.Problem? { JSONSyntax.firstProblem(in: Array(text.utf8)) }

    @Test("valid documents have no problem", arguments: [
        "{}", " [ ] ", "{\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\n\"], \"b\": {\"c\": 0}}\n", "0", "\"s\"",
    ])
    func valid(_ text: String) {
        #expect(problem(text) == nil)
    }

    @Test("the position is the first wrong character, 1-based, with what was expected")
    func positions() throws {
        let missingValue = try #require(problem("{\n  \"a\": 1,\n  \"b\": x\n}"))
        #expect((missingValue.line, missingValue.column) == (3, 8))
        #expect(missingValue.reason.contains("expected a value"))
        #expect(missingValue.reason.contains("'x'"))

        let trailingComma = try #require(problem("{\"a\": 1,\n}"))
        #expect((trailingComma.line, trailingComma.column) == (2, 1))
        #expect(trailingComma.reason.contains("expected a key"))

        let missingComma = try #require(problem("{\"a\": 1\n \"b\": 2}"))
        #expect((missingComma.line, missingComma.column) == (2, 2))
        #expect(missingComma.reason == "expected ',' or '}', found '\"'")

        let unclosed = try #require(problem("{\"a\": [1, 2"))
        #expect(unclosed.reason.contains("the end of the file"))
        #expect((unclosed.line, unclosed.column) == (1, 12))

        let single = try #require(problem("{'a': 1}"))
        #expect(single.reason.contains("double quotes"))
        #expect(problem("{\"a\": \"x")?.reason.contains("never ends") == true)
        #expect(problem("{\"a\": 01}")?.reason.contains("start with 0") == true)
        #expect(problem("{} {}")?.reason.contains("after the end") == true)
        #expect(problem("")?.reason.contains("the end of the file") == true)
        #expect(problem("{\"a\": \"tab\there\"}")?.reason.contains("control character") == true)
    }

    @Test("deep nesting is refused, not a crash")
    func deepNesting() {
        #expect(problem(String(repeating: "[", count: 100_000))?.reason.contains("nested") == true)
    }
}
