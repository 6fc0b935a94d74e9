#if canImport(Glibc)
    import Glibc
#endif

/// Scrubs room secrets from this process's own arguments, where `ps` and `/proc/PID/cmdline`
/// show them to every local user: each `secret=` value in an argument (an invite given to
/// `--join`) is overwritten in place with `x`. Arguments were already copied for parsing, so
/// nothing the daemon uses changes. A window remains between exec and this call: invites are
/// better given with `--join-file` (a 0600 file, or `-` for standard input) or `COWATCH_JOIN`.
///
/// Threading: call once, early, on the main thread (it writes the process's argv memory).
enum SecretArguments {
    static func scrub() {
        let argv = CommandLine.unsafeArgv
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = argv[index] else { continue }
            let length = strlen(argument)
            let marker = Array("secret=".utf8)
            var position = 0
            while position + marker.count <= length {
                let matches = (0..<marker.count).allSatisfy { UInt8(bitPattern: argument[position + $0]) == marker[$0] }
                guard matches else {
                    position += 1
                    continue
                }
                position += marker.count
                // The value runs to the next query separator or the end of the argument.
                while position < length, argument[position] != CChar(UInt8(ascii: "&")) {
                    argument[position] = CChar(UInt8(ascii: "x"))
                    position += 1
                }
            }
        }
    }
}
