@testable import CowatchCore
import Testing

@Suite("The journal on the server: attachments, transfers, quotas")
struct RoomJournalTests: SequencerTesting {
    static let idA = String(repeating: "a1", count: 32)
    static let idB = String(repeating: "b2", count: 32)

    /// Joins `names` (connections 1…n) speaking the journal; returns the sequencer and their tokens.
    func journalRoom(
        _ names: [String], configuration: RoomSequencer.Configuration = .init(), room: String = "r"
    ) -> (RoomSequencer, [String: String]) {
        var configuration = configuration
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        var tokens: [String: String] = [:]
        for (index, name) in names.enumerated() {
            let outputs = sequencer.enter(
                .hello(.init(features: [WireFeature.journal], room: room, name: name, activity: Activity(url: "/f.mkv"))),
                from: index + 1, now: 0)
            for case .welcome(let welcome) in messages(outputs, to: index + 1) { tokens[name] = welcome.token }
        }
        return (sequencer, tokens)
    }

    func upload(
        _ name: String, token: String?, id: String = idA, size: Int = 1000, file: String = "night.srt", room: String = "r"
    ) -> ClientMessage {
        .transfer(TransferRequest(
            room: room, name: name, token: token ?? "00.00", kind: .upload, id: id, size: size, fileName: file))
    }

    func download(_ name: String, token: String?, id: String = idA, offset: Int = 0) -> ClientMessage {
        .transfer(TransferRequest(room: "r", name: name, token: token ?? "00.00", kind: .download, id: id, offset: offset))
    }

    /// A transfer connection `id` sends `message` as its first line.
    func transfer(_ sequencer: inout RoomSequencer, _ message: ClientMessage, on id: Int, now: Double = 1) -> [Output] {
        _ = sequencer.connected(id, now: now)
        return sequencer.received(message, from: id, now: now)
    }

    func errorCode(_ outputs: [Output], to id: Int) -> String? {
        for case .error(let code, _) in messages(outputs, to: id) { return code }
        return nil
    }

    @Test("an upload is received, verified, announced to everyone; the uploader leaves and it stays for a late joiner")
    func uploadAndLateJoiner() {
        var (sequencer, tokens) = journalRoom(["alice", "bob"])
        let start = transfer(&sequencer, upload("bob", token: tokens["bob"]), on: 10)
        #expect(start == [.receiveUpload(10, id: Self.idA, size: 1000, resume: false)])
        #expect(sequencer.admission.address(of: 10) == nil)  // out of the handshake's admission now
        let done = sequencer.uploadFinished(10, verified: true, now: 2)
        let attachment = Attachment(id: Self.idA, name: "night.srt", size: 1000, from: "bob")
        #expect(messages(done, to: 10) == [.transferDone(attachment)])
        #expect(done.contains(.close(10)))
        #expect(messages(done, to: 1) == [.attachmentAdded(attachment, history: false)])
        #expect(messages(done, to: 2) == [.attachmentAdded(attachment, history: false)])
        _ = sequencer.disconnected(10, now: 2)

        _ = sequencer.disconnected(2, now: 3)  // bob leaves; alice stays
        let late = sequencer.enter(
            .hello(.init(features: [WireFeature.journal], room: "r", name: "carol", activity: Activity(url: "x"))), from: 3, now: 4)
        #expect(messages(late, to: 3).contains(.attachmentAdded(attachment, history: true)))
        var carolToken = ""
        for case .welcome(let welcome) in messages(late, to: 3) { carolToken = welcome.token }
        let fetch = transfer(&sequencer, download("carol", token: carolToken, offset: 400), on: 11, now: 5)
        #expect(fetch == [.sendDownload(11, id: Self.idA, size: 1000, offset: 400)])
    }

    /// A wrong token is refused a moment later, as a wrong room secret is.
    func refusedLate(_ sequencer: inout RoomSequencer, _ message: ClientMessage, on id: Int, now: Double) -> String? {
        guard transfer(&sequencer, message, on: id, now: now).isEmpty else { return "answered at once" }
        let refusal = sequencer.tick(now: now + sequencer.configuration.admission.authFailureDelay)
        guard refusal.contains(.close(id)) else { return "not refused" }
        return errorCode(refusal, to: id)
    }

    @Test("a transfer needs the token of a participant in the room now")
    func authentication() {
        var (sequencer, tokens) = journalRoom(["alice", "bob"])
        #expect(refusedLate(&sequencer, upload("bob", token: tokens["alice"]), on: 10, now: 1) == "auth-failed")
        #expect(refusedLate(&sequencer, upload("mallory", token: nil), on: 11, now: 3) == "auth-failed")
        _ = sequencer.disconnected(2, now: 5)
        // bob's token is genuine, but bob has left.
        #expect(refusedLate(&sequencer, upload("bob", token: tokens["bob"]), on: 12, now: 5) == "auth-failed")
        // A transfer line on a room connection is out of place.
        let misplaced = sequencer.received(upload("alice", token: tokens["alice"]), from: 1, now: 7)
        #expect(errorCode(misplaced, to: 1) == "protocol-violation")
    }

    @Test("a name whose transfer tokens keep being guessed from one address is locked out there, as for room secrets")
    func tokenGuessingLockout() {
        var (sequencer, _) = journalRoom(["alice"])
        let limit = sequencer.configuration.admission.maxAuthFailures
        for attempt in 0..<limit {
            let id = 10 + attempt
            _ = sequencer.connected(id, address: "guesser", now: Double(attempt))
            #expect(sequencer.received(upload("alice", token: "00.\(attempt)"), from: id, now: Double(attempt)).isEmpty)
            _ = sequencer.tick(now: Double(attempt) + 1)
            _ = sequencer.disconnected(id, now: Double(attempt) + 1)
        }
        // Refused at once as alice from there; the address itself (a shared NAT) is not locked out.
        #expect(errorCode(sequencer.connected(99, address: "guesser", now: Double(limit)), to: 99) == nil)
        let locked = sequencer.received(upload("alice", token: "00.x"), from: 99, now: Double(limit))
        #expect(errorCode(locked, to: 99) == "auth-failed")
        #expect(locked.contains(.close(99)))
        let other = sequencer.connected(100, address: "friend", now: Double(limit))
        #expect(errorCode(other, to: 100) == nil)
    }

    @Test("size and quota limits give clear errors with stable codes; nothing else is lost")
    func limits() {
        var configuration = RoomSequencer.Configuration()
        configuration.journal.maxAttachmentBytes = 2000
        configuration.journal.roomQuotaBytes = 3000
        configuration.journal.totalQuotaBytes = 4000
        var (sequencer, tokens) = journalRoom(["alice", "bob"], configuration: configuration)
        let tooLarge = transfer(&sequencer, upload("bob", token: tokens["bob"], size: 2001), on: 10)
        #expect(errorCode(tooLarge, to: 10) == "too-large")
        #expect(tooLarge.contains(.close(10)))
        _ = sequencer.disconnected(10, now: 1)

        #expect(transfer(&sequencer, upload("bob", token: tokens["bob"], size: 2000), on: 11) == [.receiveUpload(11, id: Self.idA, size: 2000, resume: false)])
        _ = sequencer.uploadFinished(11, verified: true, now: 2)
        _ = sequencer.disconnected(11, now: 2)
        let overRoom = transfer(&sequencer, upload("alice", token: tokens["alice"], id: Self.idB, size: 1001), on: 12)
        #expect(errorCode(overRoom, to: 12) == "quota-exceeded")
        // The room is untouched: the first attachment is still there, and the room still plays.
        #expect(sequencer.journal.attachments(in: "r").map(\.id) == [Self.idA])
        #expect(!applied(sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 3), to: 2).isEmpty)

        // The total quota spans rooms; content already stored costs the total nothing.
        var other = sequencer
        let joined = other.enter(
            .hello(.init(features: [WireFeature.journal], room: "s", name: "dan", activity: Activity(url: "x"))), from: 5, now: 3)
        var danToken = ""
        for case .welcome(let welcome) in messages(joined, to: 5) { danToken = welcome.token }
        let overTotal = transfer(&other, upload("dan", token: danToken, id: Self.idB, size: 2001, room: "s"), on: 13)
        #expect(errorCode(overTotal, to: 13) == "too-large")
        let overTotal2 = transfer(&other, upload("dan", token: danToken, id: Self.idB, size: 2000, room: "s"), on: 14)
        #expect(errorCode(overTotal2, to: 14) == nil)
        other.uploadInterrupted(14, received: 2000)
        _ = other.disconnected(14, now: 4)  // interrupted with all 2000 bytes: they stay held
        let full = transfer(&other, upload("dan", token: danToken, id: String(repeating: "c3", count: 32), size: 100, room: "s"), on: 15)
        #expect(errorCode(full, to: 15) == "quota-exceeded")
        // Content already stored still counts against the room's own quota (2000 + 2000 > 3000).
        let same = transfer(&other, upload("dan", token: danToken, id: Self.idA, size: 2000, room: "s"), on: 16)
        #expect(errorCode(same, to: 16) == "quota-exceeded")
    }

    @Test("a failed check discards the upload; an interrupted one resumes on a new connection")
    func verificationAndResume() {
        var (sequencer, tokens) = journalRoom(["alice", "bob"])
        _ = transfer(&sequencer, upload("bob", token: tokens["bob"]), on: 10)
        let bad = sequencer.uploadFinished(10, verified: false, now: 2)
        #expect(errorCode(bad, to: 10) == "hash-mismatch")
        #expect(bad.contains(.deleteStored(Self.idA)))
        #expect(messages(bad, to: 1).isEmpty)
        _ = sequencer.disconnected(10, now: 2)

        _ = transfer(&sequencer, upload("bob", token: tokens["bob"]), on: 11)
        // The same content from someone else while it streams: busy.
        #expect(errorCode(transfer(&sequencer, upload("alice", token: tokens["alice"]), on: 12), to: 12) == "server-busy")
        sequencer.uploadInterrupted(11, received: 400)
        _ = sequencer.disconnected(11, now: 3)  // dropped midway
        #expect(transfer(&sequencer, upload("bob", token: tokens["bob"]), on: 13) == [.receiveUpload(13, id: Self.idA, size: 1000, resume: true)])
        #expect(messages(sequencer.uploadFinished(13, verified: true, now: 4), to: 2).count == 1)
    }

    @Test("detach removes it for everyone and deletes the bytes; the room emptying deletes the rest")
    func detachAndEmptyRoom() {
        var configuration = RoomSequencer.Configuration()
        configuration.managed = true
        var (sequencer, tokens) = journalRoom(["alice", "bob", "carol"], configuration: configuration)
        _ = transfer(&sequencer, upload("bob", token: tokens["bob"]), on: 10)
        _ = sequencer.uploadFinished(10, verified: true, now: 2)
        _ = transfer(&sequencer, upload("bob", token: tokens["bob"], id: Self.idB, file: "b.txt"), on: 11)
        _ = sequencer.uploadFinished(11, verified: true, now: 2)

        let refused = sequencer.received(.detach(id: 5, attachment: Self.idA), from: 3, now: 3)  // carol: not hers, managed room
        #expect(messages(refused, to: 3).first.map { if case .refused(5, "not-permitted", _) = $0 { true } else { false } } == true)
        let missing = sequencer.received(.detach(id: 6, attachment: String(repeating: "00", count: 32)), from: 1, now: 3)
        #expect(messages(missing, to: 1).first.map { if case .refused(6, "not-found", _) = $0 { true } else { false } } == true)

        let removed = sequencer.received(.detach(id: 7, attachment: Self.idA), from: 1, now: 3)  // the owner may
        #expect(messages(removed, to: 1) == [.attachmentRemoved(id: Self.idA, by: "alice", requestID: 7)])
        #expect(messages(removed, to: 2) == [.attachmentRemoved(id: Self.idA, by: "alice", requestID: nil)])
        #expect(removed.contains(.deleteStored(Self.idA)))

        _ = sequencer.disconnected(1, now: 4)
        _ = sequencer.disconnected(2, now: 4)
        let last = sequencer.disconnected(3, now: 4)
        #expect(last.contains(.deleteStored(Self.idB)))
        #expect(sequencer.journal.totalBytes == 0)
    }

    @Test("content shared by two rooms is stored once and deleted only when neither lists it")
    func sharedContent() {
        var (sequencer, tokens) = journalRoom(["alice"])
        let joined = sequencer.enter(
            .hello(.init(features: [WireFeature.journal], room: "s", name: "dan", activity: Activity(url: "x"))), from: 2, now: 0)
        var danToken = ""
        for case .welcome(let welcome) in messages(joined, to: 2) { danToken = welcome.token }
        _ = transfer(&sequencer, upload("alice", token: tokens["alice"]), on: 10)
        _ = sequencer.uploadFinished(10, verified: true, now: 1)
        let dedup = transfer(&sequencer, upload("dan", token: danToken, room: "s"), on: 11)
        #expect(messages(dedup, to: 2) == [.attachmentAdded(Attachment(id: Self.idA, name: "night.srt", size: 1000, from: "dan"), history: false)])
        #expect(sequencer.journal.totalBytes == 1000)
        #expect(!sequencer.disconnected(1, now: 2).contains(.deleteStored(Self.idA)))
        #expect(sequencer.disconnected(2, now: 2).contains(.deleteStored(Self.idA)))
    }

    @Test("--no-attachments: not offered, and transfers get unsupported")
    func disabled() {
        var configuration = RoomSequencer.Configuration()
        configuration.journal.enabled = false
        var (sequencer, tokens) = journalRoom(["alice"], configuration: configuration)
        #expect(errorCode(transfer(&sequencer, upload("alice", token: tokens["alice"]), on: 10), to: 10) == "unsupported")
        #expect(messages(sequencer.received(.detach(id: 1, attachment: Self.idA), from: 1, now: 1), to: 1) == [.unsupported(type: "detach")])
    }

    @Test("names from peers are made safe; sizes parse with units", arguments: [
        ("../../etc/passwd", "passwd"), ("..", nil), (".bashrc", "bashrc"), ("a\u{0}b\u{7}.srt", "a_b_.srt"),
        ("C:\\Users\\x\\night.srt", "night.srt"), ("evil\u{202E}txt.srt", "evil_txt.srt"), ("  ", nil), ("ok. ", "ok"),
    ] as [(String, String?)])
    func names(raw: String, safe: String?) {
        #expect(AttachmentName.sanitised(raw) == safe)
        if let safe { #expect(AttachmentName.isSafe(safe)) }
        #expect(!AttachmentName.isSafe(raw) || raw == safe)
    }

    @Test("sizes, subtitles")
    func sizesAndKinds() {
        #expect(RoomJournal.parseSize("100M") == 104_857_600)
        #expect(RoomJournal.parseSize("1G") == 1_073_741_824)
        #expect(RoomJournal.parseSize("2KiB") == 2048)
        #expect(RoomJournal.parseSize("512") == 512)
        #expect(RoomJournal.parseSize("-1") == nil)
        #expect(RoomJournal.parseSize("lots") == nil)
        #expect(RoomJournal.parseSize("2T") == nil)
        let long = String(repeating: "x", count: 300) + ".srt"
        #expect(AttachmentName.sanitised(long)?.hasSuffix(".srt") == true)
        #expect(AttachmentName.sanitised(long)?.utf8.count == AttachmentName.maxBytes)
        #expect(Attachment(id: Self.idA, name: "Night.EN.SRT", size: 1, from: "a").isSubtitles)
        #expect(Attachment(id: Self.idA, name: "x.vtt", size: 1, from: "a").isSubtitles)
        #expect(!Attachment(id: Self.idA, name: "x.srt.zip", size: 1, from: "a").isSubtitles)
        #expect(Attachment(id: Self.idA, name: "subs", size: 1, from: "a", meta: ["kind": "subtitles"]).isSubtitles)
        #expect(!Attachment(id: Self.idA, name: "x.srt", size: 1, from: "a", meta: ["kind": "notes"]).isSubtitles)
    }

    @Test("subtitles for a playlist entry name it by id; anything else names none")
    func entrySubtitles() {
        let meta = Attachment.entrySubtitlesMeta(7, adding: ["lang": "en", "kind": "notes"])
        #expect(meta == ["lang": "en", "kind": "entry-subtitles", "entry": 7])
        let attachment = Attachment(id: Self.idA, name: "e3", size: 1, from: "a", meta: meta)
        #expect(attachment.isSubtitles && attachment.subtitlesEntry == 7)
        #expect(Attachment(id: Self.idA, name: "x.srt", size: 1, from: "a").subtitlesEntry == nil)
        #expect(Attachment(id: Self.idA, name: "x.srt", size: 1, from: "a", meta: ["kind": "subtitles", "entry": 7]).subtitlesEntry == nil)
        // A peer's hostile entry is no entry at all.
        for hostile: JSONValue in [0, -3, 2.5, 1e300, "7", .null, [7], .bool(true)] {
            let odd = Attachment(id: Self.idA, name: "x.srt", size: 1, from: "a", meta: ["kind": "entry-subtitles", "entry": hostile])
            #expect(odd.subtitlesEntry == nil, "\(hostile.jsonString)")
            #expect(odd.isSubtitles)
        }
    }
}

@Suite("Transfer pacing")
struct TransferPaceTests {
    @Test("unlimited never waits; a rate spreads chunks so the average stays at the rate")
    func pacing() {
        var free = TransferPace(bytesPerSecond: 0)
        #expect(free.delay(for: 1 << 30, now: 0) == 0)
        var pace = TransferPace(bytesPerSecond: 1_000_000)
        var now = 0.0
        var moved = 0
        while moved < 10_000_000 {
            now += pace.delay(for: 250_000, now: now)
            moved += 250_000
        }
        // 10 MB at 1 MB/s, less the first quarter second's burst.
        #expect(abs(now - 9.75) < 0.3, "\(now)")
        // An idle pause refills only the burst, not the whole pause.
        now += 100
        #expect(pace.delay(for: 250_000, now: now) == 0)
        #expect(pace.delay(for: 250_000, now: now) > 0.2)
    }
}
