/// Test bytes for the stream suites: a file whose every byte depends on its position, so a block
/// put in the wrong place, or a range off by one, shows.
enum PatternedFilm {
    static func bytes(_ size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        // Eight bytes at a time: fast enough unoptimized for tens of MiB.
        bytes.withUnsafeMutableBytes { raw in
            for word in 0..<(size / 8) {
                raw.storeBytes(of: UInt64(word + 1) &* 0x9E37_79B9_7F4A_7C15, toByteOffset: word * 8, as: UInt64.self)
            }
        }
        for index in (size / 8 * 8)..<size { bytes[index] = UInt8(truncatingIfNeeded: index) }
        return bytes
    }
}
