import CowatchCore
import Testing

@Suite("Media identity: fingerprint, matching, hostile identities, the index")
struct MediaIdentityTests {
    /// A file's bytes as the indexer reads them: head and tail ranges.
    static func fingerprint(of bytes: [UInt8]) -> String {
        MediaIdentity.fingerprint(
            head: bytes[MediaIdentity.headRange(size: bytes.count)], tail: bytes[MediaIdentity.tailRange(size: bytes.count)],
            size: bytes.count)
    }

    static func identity(of bytes: [UInt8], name: String = "night.mkv", duration: Double? = nil) -> MediaIdentity {
        MediaIdentity(size: bytes.count, fingerprint: fingerprint(of: bytes), duration: duration, name: name)
    }

    /// 200 000 bytes, `i % 251`: head, middle and tail all distinct.
    static let film = (0..<200_000).map { UInt8($0 % 251) }

    // MARK: Fingerprint

    @Test("the fingerprint is SHA-256(head ‖ tail ‖ size as 8 bytes big-endian), known values computed elsewhere")
    func knownFingerprints() {
        // Python: sha256(head + tail + struct.pack(">Q", size)), head/tail the first/last 64 KiB.
        #expect(Self.fingerprint(of: Array("abc".utf8)) == "a7e79e8a85da69bad5c3fea209342ac98858c5ea717841fb782baf360ad09ce0")
        #expect(Self.fingerprint(of: []) == "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc")
        #expect(Self.fingerprint(of: Self.film) == "61e64b140c4cde7f484d1591efd6776fc882f4e631badbf81dc663145d0a2fd8")
        // Stable: the same input, the same text; always 64 lowercase hex digits.
        #expect(Self.fingerprint(of: Self.film) == Self.fingerprint(of: Self.film))
        #expect(MediaIdentity.isValidFingerprint(Self.fingerprint(of: Self.film)))
    }

    @Test("head and tail ranges: the first and last 64 KiB, the whole file twice when it is smaller")
    func ranges() {
        #expect(MediaIdentity.headRange(size: 200_000) == 0..<65_536)
        #expect(MediaIdentity.tailRange(size: 200_000) == 134_464..<200_000)
        #expect(MediaIdentity.headRange(size: 100) == 0..<100)
        #expect(MediaIdentity.tailRange(size: 100) == 0..<100)
        #expect(MediaIdentity.headRange(size: 0).isEmpty && MediaIdentity.tailRange(size: 0).isEmpty)
    }

    @Test("one byte changed in the head or the tail, or a different size, is a different file; the middle is not read")
    func oneByteChanged() {
        let original = Self.identity(of: Self.film)
        var head = Self.film
        head[10] ^= 1
        var tail = Self.film
        tail[tail.count - 10] ^= 1
        var middle = Self.film
        middle[100_000] ^= 1
        #expect(!Self.identity(of: head).matches(original))
        #expect(!Self.identity(of: tail).matches(original))
        #expect(Self.identity(of: middle).matches(original))  // by design: 128 KiB read per file
        // The same bytes claimed at another size: the size is hashed too.
        let otherSize = MediaIdentity(
            size: Self.film.count + 1,
            fingerprint: MediaIdentity.fingerprint(
                head: Self.film[MediaIdentity.headRange(size: Self.film.count)],
                tail: Self.film[MediaIdentity.tailRange(size: Self.film.count)], size: Self.film.count + 1),
            name: "night.mkv")
        #expect(otherSize.fingerprint != original.fingerprint)
        #expect(!otherSize.matches(original))
        // Same fingerprint text but another size field: no match either.
        var lying = original
        lying.size += 1
        #expect(!lying.matches(original))
    }

    @Test("the same content under another name matches; durations count only when both are known, within 1 s")
    func matching() {
        let mine = Self.identity(of: Self.film, name: "night.mkv")
        #expect(Self.identity(of: Self.film, name: "Die Nacht (1999).mkv").matches(mine))
        let timed = Self.identity(of: Self.film, duration: 5_400)
        #expect(timed.matches(mine) && mine.matches(timed))
        #expect(timed.matches(Self.identity(of: Self.film, duration: 5_400.9)))
        #expect(!timed.matches(Self.identity(of: Self.film, duration: 5_402)))
    }

    // MARK: Hostile identities

    @Test("a peer's identity is checked: size, fingerprint, duration and name")
    func hostile() throws {
        let good = Self.identity(of: Self.film, duration: 5_400)
        try good.validate()
        try MediaIdentity(size: 0, fingerprint: good.fingerprint, duration: 0, name: "a").validate()
        try MediaIdentity(size: MediaIdentity.maxSize, fingerprint: good.fingerprint, duration: nil, name: "ナイト.mkv").validate()
        var bad: [MediaIdentity] = []
        for size in [-1, MediaIdentity.maxSize + 1, Int.max] {
            bad.append(MediaIdentity(size: size, fingerprint: good.fingerprint, name: "night.mkv"))
        }
        let upper = good.fingerprint.uppercased()
        for fingerprint in ["", String(good.fingerprint.dropLast()), good.fingerprint + "0", upper, "g" + good.fingerprint.dropFirst(), "sha256:" + good.fingerprint] {
            bad.append(MediaIdentity(size: 1, fingerprint: fingerprint, name: "night.mkv"))
        }
        for duration in [-1, .nan, .infinity, -.infinity, MediaIdentity.maxDuration, 1e300] {
            bad.append(MediaIdentity(size: 1, fingerprint: good.fingerprint, duration: duration, name: "night.mkv"))
        }
        for name in [
            "", ".", "..", "a/b", "/etc/passwd", "night\n.mkv", "night\u{1b}[2J.mkv", "evil\u{202E}vkm.exe", "\u{0}",
            "a\u{85}b", String(repeating: "x", count: 256), String(repeating: "é", count: 128),
        ] {
            bad.append(MediaIdentity(size: 1, fingerprint: good.fingerprint, name: name))
        }
        for identity in bad {
            #expect(throws: CowatchError.invalidMediaIdentity("")) { try identity.validate() }
            #expect(throws: CowatchError.self) {
                try MediaIdentity(validating: identity.size, fingerprint: identity.fingerprint, duration: identity.duration, name: identity.name)
            }
        }
        do {
            try MediaIdentity(size: 1, fingerprint: good.fingerprint, name: "x\u{1b}").validate()
            Issue.record("a name with ESC passed")
        } catch {
            #expect(error.code == .protocolViolation)
            #expect(!error.message.contains("\u{1b}"))  // the peer's text is not echoed
        }
    }

    @Test("display names: the basename, controls and bidi overrides replaced, cut to 255 bytes keeping the extension")
    func displayNames() {
        #expect(MediaIdentity.displayName(forPath: "/home/alice/Films/night.mkv") == "night.mkv")
        #expect(MediaIdentity.displayName(forPath: "night.mkv") == "night.mkv")
        #expect(MediaIdentity.displayName(forPath: "/x/a\nb\u{202E}c.mkv") == "a_b_c.mkv")
        let long = MediaIdentity.displayName(forPath: "/x/" + String(repeating: "é", count: 300) + ".mkv")
        #expect(long.utf8.count <= 255 && long.hasSuffix(".mkv") && MediaIdentity.isValidName(long))
        #expect(MediaIdentity.displayName(forPath: "/") == "media")
        #expect(MediaIdentity.displayName(forPath: "/x/..") == "media")
    }

    // MARK: The index

    static func stamp(_ path: String, size: Int = 100, modified: Int64 = 1, inode: UInt64 = 0) -> MediaIndex.FileStamp {
        MediaIndex.FileStamp(path: path, size: size, modified: modified, inode: inode)
    }

    static func entry(_ path: String, bytes: [UInt8], modified: Int64 = 1, inode: UInt64 = 0) -> MediaIndex.Entry {
        MediaIndex.Entry(
            stamp: stamp(path, size: bytes.count, modified: modified, inode: inode),
            identity: identity(of: bytes, name: MediaIdentity.displayName(forPath: path)))
    }

    @Test("lookup by identity, whatever the name; the file named as the hint first; near misses by name and size")
    func lookup() {
        var other = Self.film
        other[0] ^= 0xff
        var index = MediaIndex()
        index.insert(Self.entry("/m/a/copy.mkv", bytes: Self.film))
        index.insert(Self.entry("/m/b/Night.MKV", bytes: Self.film))
        index.insert(Self.entry("/m/night.mkv", bytes: other))
        index.insert(Self.entry("/m/z/night.mkv", bytes: Self.film))
        let wanted = Self.identity(of: Self.film, name: "night.mkv")
        #expect(index.matches(for: wanted).map(\.path) == ["/m/z/night.mkv", "/m/b/Night.MKV", "/m/a/copy.mkv"])
        #expect(index.lookup(wanted)?.path == "/m/z/night.mkv")
        #expect(index.lookup(Self.identity(of: Self.film, name: "whatever.mp4"))?.path == "/m/a/copy.mkv")
        // A known duration on the wanted side, unknown on the indexed: still a match.
        #expect(index.lookup(Self.identity(of: Self.film, duration: 60)) != nil)
        // Not here: nothing; files of that name (case aside) are near misses, then files of that size.
        let missing = Self.identity(of: Self.film + [7], name: "night.mkv")
        #expect(index.lookup(missing) == nil)
        #expect(index.nearMisses(for: missing).map(\.path) == ["/m/b/Night.MKV", "/m/night.mkv", "/m/z/night.mkv"])
        let sameSize = Self.identity(of: Array(Self.film.reversed()), name: "other.mkv")
        #expect(index.lookup(sameSize) == nil)
        #expect(index.nearMisses(for: sameSize, limit: 3).map(\.path) == ["/m/a/copy.mkv", "/m/b/Night.MKV", "/m/night.mkv"])
        // Matching files are never near misses.
        #expect(index.nearMisses(for: wanted).map(\.path) == ["/m/night.mkv"])
        #expect(index.entries(named: "NIGHT.mkv").map(\.path) == ["/m/b/Night.MKV", "/m/night.mkv", "/m/z/night.mkv"])
        #expect(index.entries(ofSize: Self.film.count).count == 4)
        // Removing a path removes it from every lookup.
        index.remove(path: "/m/z/night.mkv")
        #expect(index.lookup(wanted)?.path == "/m/b/Night.MKV")
        #expect(index.entries(named: "night.mkv").count == 2)
        #expect(index.count == 3)
    }

    @Test("the index is bounded: a new path past capacity is refused, a known path is replaced")
    func bounded() {
        var index = MediaIndex(capacity: 2)
        let first = index.insert(Self.entry("/m/1.mkv", bytes: [1]))
        let second = index.insert(Self.entry("/m/2.mkv", bytes: [2]))
        #expect(first && second && index.isFull)
        let third = index.insert(Self.entry("/m/3.mkv", bytes: [3]))
        #expect(!third)
        #expect(index.entry(atPath: "/m/3.mkv") == nil)
        let replaced = index.insert(Self.entry("/m/2.mkv", bytes: [4]))
        #expect(replaced)
        #expect(index.lookup(Self.identity(of: [4]))?.path == "/m/2.mkv")
        #expect(index.lookup(Self.identity(of: [2])) == nil)
        #expect(index.count == 2)
        #expect(MediaIndex.defaultCapacity == 100_000)
    }

    @Test("a refresh rehashes only new and changed files (size, time or inode) and drops vanished ones")
    func incremental() {
        var index = MediaIndex()
        index.insert(Self.entry("/m/same.mkv", bytes: [1, 2, 3], modified: 10, inode: 5))
        index.insert(Self.entry("/m/grown.mkv", bytes: [1, 2], modified: 10, inode: 6))
        index.insert(Self.entry("/m/touched.mkv", bytes: [3], modified: 10, inode: 7))
        index.insert(Self.entry("/m/replaced.mkv", bytes: [4], modified: 10, inode: 8))
        index.insert(Self.entry("/m/gone.mkv", bytes: [5], modified: 10, inode: 9))
        let listing = [
            Self.stamp("/m/same.mkv", size: 3, modified: 10, inode: 5),
            Self.stamp("/m/grown.mkv", size: 3, modified: 10, inode: 6),
            Self.stamp("/m/touched.mkv", size: 1, modified: 11, inode: 7),
            Self.stamp("/m/replaced.mkv", size: 1, modified: 10, inode: 80),
            Self.stamp("/m/new.mkv", size: 9, modified: 10, inode: 10),
            Self.stamp("/m/new.mkv", size: 9, modified: 10, inode: 10),  // listed twice: once
        ]
        let refresh = index.refresh(for: listing, complete: true)
        #expect(refresh.toHash.map(\.path) == ["/m/grown.mkv", "/m/touched.mkv", "/m/replaced.mkv", "/m/new.mkv"])
        #expect(refresh.vanished == ["/m/gone.mkv"])
        #expect(refresh.unchanged == 1)
        // An incomplete listing says nothing of what it did not reach.
        let partial = index.refresh(for: Array(listing.prefix(1)), complete: false)
        #expect(partial.vanished.isEmpty && partial.toHash.isEmpty && partial.unchanged == 1)
        // Applying drops the stale entries: a changed file resolves to nothing until rehashed.
        index.apply(refresh)
        #expect(index.allEntries.map(\.path) == ["/m/same.mkv"])
        #expect(index.lookup(Self.identity(of: [1, 2])) == nil)
        // After hashing, the next refresh of the same listing has nothing to do.
        index.insert(Self.entry("/m/grown.mkv", bytes: [1, 2, 3], modified: 10, inode: 6))
        index.insert(Self.entry("/m/touched.mkv", bytes: [3], modified: 11, inode: 7))
        index.insert(Self.entry("/m/replaced.mkv", bytes: [4], modified: 10, inode: 80))
        index.insert(Self.entry("/m/new.mkv", bytes: Array(repeating: 0, count: 9), modified: 10, inode: 10))
        let again = index.refresh(for: listing, complete: true)
        #expect(again == MediaIndex.Refresh(toHash: [], vanished: [], unchanged: 5))
    }
}
