/// One room's playback: the group timeline, holds for stalled or unready participants, readiness
/// and media comparison. Who may join, and who may do what, is decided before (see
/// `RoomSequencer` and `ServerAdmission`); this machine trusts its inputs.
///
/// Every timeline is in the server's monotonic clock (`now`), the room's reference clock.
/// A pure state machine: event methods return `Output`s (messages for members) for the shell.
/// Threading: a value type; one owner.
public struct RoomPlayback: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds: the earliest a scheduled play or speed change takes effect. Default 0.12 s.
        public var minLead: Double = 0.12
        /// Lead = max(minLead, factor × the largest reported round trip + margin), capped at maxLead.
        public var leadRTTFactor: Double = 2
        public var leadMargin: Double = 0.03
        public var maxLead: Double = 2
        /// Seconds a pause is scheduled ahead beyond the largest reported round trip, so that
        /// every member has it before its instant and all pause together. Default 2 ms.
        public var pauseLeadMargin: Double = 0.002
        /// The longest such lead (round trip + margin): past it, or while a member's round trip
        /// is unknown, a pause takes effect at once (each player pauses as the order reaches it,
        /// and seeks back to the pause position). Default 6 ms: a link a person would never feel.
        public var maxPauseLead: Double = 0.006
        /// Seconds the group waits, after a seek while playing, for everyone to land. Default 2 s.
        public var seekReadyTimeout: Double = 2
        /// Seconds the group waits for a stalled participant (buffering, a slow seek) or, under
        /// `playWhenReady`, an unready one, before carrying on without it. Default 5 s.
        public var waitTimeout: Double = 5
        /// Seconds the group waits for everyone to load media switched to with `open`. Default 15 s.
        public var openTimeout: Double = 15
        /// Seconds a participant the group stopped waiting for is not waited for again: a viewer on
        /// a link too slow for the media would otherwise pause everyone over and over. Default 30 s.
        public var giveUpCooldown: Double = 30
        /// A participant (counted by its address, so re-joining under any name does not reset
        /// it) that stalls the playing group this many times within `stallWindow` seconds is
        /// given up on at once (cooldown as above). Defaults 3 and 60 s.
        public var maxStallHolds = 3
        public var stallWindow: Double = 60
        /// Seconds after joining during which a participant's stalls never hold a playing group:
        /// a newcomer catches up on its own. Default 5 s.
        public var newcomerGrace: Double = 5
        /// Seconds into a hold before "waiting for …" is announced (stalls announce at once). Default 1 s.
        public var announceDelay: Double = 1
        /// Room policy "play when everyone is ready". Default false.
        public var playWhenReady = false
        /// Only owners and operators control playback. Default false.
        public var managed = false
        /// Seconds between checks of the participant list: it goes out at such a check when who
        /// is there, their state, status or role changed. Default 1 s.
        public var participantsInterval: Double = 1
        /// Seconds between lists that only refresh drifts and round trips (each member reports
        /// every second; sending all of them to everyone every second was most of a big server's
        /// traffic). Default 5 s.
        public var metricsInterval: Double = 5
        /// Seconds without a report (every member sends one a second) after which a member's
        /// state reads `silent`: its link is dark, and its last drift is old news. Default 5 s.
        public var silentAfter: Double = 5

        public init() {}
    }

    public typealias MemberID = Int

    public enum Output: Sendable, Equatable {
        case send(MemberID, ServerMessage)
    }

    struct Member {
        var name: String
        /// Whose stall history this participant shares (its address).
        var stallKey: String
        var role: Role
        var joinedAt: Double
        var drift: Double?
        var rtt: Double?
        var status: ParticipantStatus
        /// The film stream it plays, as it last said (`stream`).
        var stream: StreamReport?
        /// When it last reported (its join to begin with).
        var heardAt: Double
    }

    /// Stalls that held the group, per address, and until when the group does not wait for it.
    struct StallHistory {
        var holds: [Double] = []
        var givenUpUntil = -Double.infinity
    }

    /// The group holds (paused, `holding`) until everyone it waits for is there, or `deadline`.
    struct Hold {
        var seq: Int
        var deadline: Double
        /// Who reported `ready` (landed on the held position) for `seq`.
        var landed: Set<MemberID> = []
        /// Under the play-when-ready policy, a play or open also waits for readiness.
        var needsReadiness = false
        /// When to say "waiting for …" if someone is still missing; nil once said.
        var announceAt: Double?
        /// When the hold began: landing takes a moment and is only worth announcing later.
        var since: Double
        /// Seconds between the hold's end and the group's start, at least the usual lead (a
        /// playlist's countdown; 0 for the others).
        var countdown: Double = 0
    }

    public let configuration: Configuration
    public private(set) var timeline: GroupTimeline
    public private(set) var activity: Activity
    /// Members in joining order.
    private(set) var order: [MemberID] = []
    private var members: [MemberID: Member] = [:]
    private var stalls: [String: StallHistory] = [:]
    var hold: Hold?
    private var nextParticipantsBroadcast: Double
    /// The last list sent, and when: the next goes out only when it differs.
    private var lastParticipants: [ParticipantInfo]?
    private var lastParticipantsAt = -Double.infinity
    /// The first media report for the current activity: everyone else's is compared with it.
    private var mediaReference: (name: String, info: MediaInfo)?
    /// Who was already named as having a different file, for this activity (named once).
    private var mismatchesAnnounced: Set<String> = []
    /// Members the group does not wait for while this activity lasts (they lack its media:
    /// `excuse`); cleared when the activity changes.
    private var excused: Set<MemberID> = []

    public init(activity: Activity, timeline: GroupTimeline, now: Double, configuration: Configuration = .init()) {
        self.activity = activity
        self.timeline = timeline
        self.configuration = configuration
        self.nextParticipantsBroadcast = now + configuration.participantsInterval
    }

    /// What every participant is told about the room's rules.
    public var policy: RoomPolicy {
        RoomPolicy(playWhenReady: configuration.playWhenReady, waitTimeout: configuration.waitTimeout, managed: configuration.managed)
    }

    public var isEmpty: Bool { order.isEmpty }
    public var memberIDs: [MemberID] { order }

    public func member(named name: String) -> MemberID? { order.first { members[$0]?.name == name } }
    /// Members who joined from `address` (its budget key, `AddressIdentity`).
    public func memberCount(from address: String) -> Int { members.values.filter { $0.stallKey == address }.count }
    /// The member heard from longest ago, when that is more than `seconds` before `now`.
    public func longestSilent(longerThan seconds: Double, now: Double) -> MemberID? {
        order.filter { (members[$0].map { now - $0.heardAt } ?? 0) > seconds }.min { members[$0]!.heardAt < members[$1]!.heardAt }
    }
    /// Seconds since the member heard from most recently said anything (infinity in an empty room).
    public func shortestSilence(now: Double) -> Double {
        members.values.map { now - $0.heardAt }.min() ?? .infinity
    }
    public func name(of id: MemberID) -> String? { members[id]?.name }
    public func role(of id: MemberID) -> Role? { members[id]?.role }
    /// True when someone here now joined before `id` (a newcomer to their evening).
    public func hasSomeoneBefore(_ id: MemberID) -> Bool {
        guard let mine = members[id]?.joinedAt else { return false }
        return members.contains { $0.key != id && $0.value.joinedAt < mine }
    }

    // MARK: Members

    /// Adds a member (it gets its welcome from the caller) and tells the others.
    public mutating func join(
        _ id: MemberID, name: String, stallKey: String, role: Role, status: ParticipantStatus, now: Double
    ) -> [Output] {
        order.append(id)
        members[id] = Member(name: name, stallKey: stallKey, role: role, joinedAt: now, status: status, heardAt: now)
        // Joining never touches the timeline: the newcomer aligns to it, nobody else moves.
        return broadcast(.notice(Notice(actor: name, action: .join)))
    }

    /// Removes a member; the others hear `notice` (a leave, by default).
    public mutating func leave(_ id: MemberID, now: Double, notice: Notice? = nil) -> [Output] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        order.removeAll { $0 == id }
        hold?.landed.remove(id)
        excused.remove(id)
        guard !order.isEmpty else { return [] }
        var outputs = broadcast(.notice(notice ?? Notice(actor: member.name, action: .leave)))
        outputs += resumeIfNobodyMissing(now: now)
        return outputs
    }

    public mutating func setRole(_ role: Role, of id: MemberID) {
        members[id]?.role = role
    }

    public mutating func report(drift: Double?, rtt: Double?, from id: MemberID, now: Double) {
        members[id]?.drift = drift
        members[id]?.rtt = rtt
        members[id]?.heardAt = now
    }

    /// A member told how the film stream it plays fares (nil: none now). Shown in the next
    /// participant list; it moves nothing.
    public mutating func streamReported(_ report: StreamReport?, from id: MemberID) {
        members[id]?.stream = report
    }

    // MARK: Actions

    private var lead: Double {
        let worst = order.compactMap { members[$0]?.rtt }.max() ?? 0
        return min(configuration.maxLead, max(configuration.minLead, configuration.leadRTTFactor * worst + configuration.leadMargin))
    }

    /// When a pause now should take effect: a few milliseconds ahead when every member is near
    /// (each has the order before its instant, and every player pauses on the same instant of
    /// the reference clock, as a scheduled start plays), else at once. Only a playing group
    /// pauses ahead; its position at that instant is the pause position.
    private func pauseInstant(now: Double, playing: Bool) -> Double {
        guard playing else { return now }
        let rtts = order.map { members[$0]?.rtt }
        guard !rtts.isEmpty, !rtts.contains(where: { $0 == nil }) else { return now }
        let lead = (rtts.compactMap { $0 }.max() ?? 0) + configuration.pauseLeadMargin
        return lead <= configuration.maxPauseLead ? now + lead : now
    }

    /// Carries out an action everyone hears about; the originator's `applied` echoes its id.
    public mutating func apply(_ action: ClientMessage.ActionRequest, from id: MemberID, now: Double) -> [Output] {
        guard let name = members[id]?.name else { return [] }
        let old = timeline
        let seq = old.seq + 1
        let at = now + lead
        let previousHold = hold
        hold = nil
        var newActivity: Activity?
        let next: GroupTimeline
        let notice: Notice
        switch action.kind {
        case .pause:
            // Scheduled ahead, the group's own position at the instant is where everyone stops
            // (the pauser's player has not stopped either: it pauses with the room's order).
            let instant = pauseInstant(now: now, playing: old.playing && old.isEffective(at: now))
            let position = instant > now ? old.position(at: instant) : action.position ?? old.position(at: now)
            next = GroupTimeline(seq: seq, position: position, reference: instant, rate: old.rate, playing: false)
            notice = Notice(actor: name, action: .pause, position: position)
        case .play:
            // Pressing play says "I am ready", as in Syncplay.
            members[id]?.status.ready = true
            // If a hold is on, play starts from the held position.
            let position = old.position(at: at)
            notice = Notice(actor: name, action: .play, position: position)
            let playHold = Hold(
                seq: seq, deadline: previousHold?.deadline ?? now + configuration.waitTimeout,
                needsReadiness: configuration.playWhenReady, announceAt: now, since: now)
            if !missing(hold: playHold, timeline: old, now: now).isEmpty {
                // Someone is stalled or not ready: hold at the position until they are, bounded.
                next = GroupTimeline(seq: seq, position: position, reference: now, rate: old.rate, playing: false, holding: true)
                hold = playHold
            } else {
                next = GroupTimeline(seq: seq, position: position, reference: at, rate: old.rate, playing: true)
            }
        case .seek:
            let target = action.position ?? 0
            let wasPlaying = old.playing || old.holding
            next = GroupTimeline(seq: seq, position: target, reference: now, rate: old.rate, playing: false, holding: wasPlaying)
            notice = Notice(actor: name, action: .seek, position: target, from: action.from ?? old.position(at: now), to: target)
            if wasPlaying {
                // A seek during a longer hold (an open) keeps that hold's bound and readiness.
                hold = Hold(
                    seq: seq, deadline: max(now + configuration.seekReadyTimeout, previousHold?.deadline ?? 0),
                    needsReadiness: previousHold?.needsReadiness ?? false, announceAt: now + configuration.announceDelay,
                    since: now, countdown: previousHold?.countdown ?? 0)
            }
        case .speed:
            let rate = action.rate ?? old.rate
            if old.playing {
                next = GroupTimeline(seq: seq, position: old.position(at: at), reference: at, rate: rate, playing: true)
            } else {
                next = GroupTimeline(seq: seq, position: old.position, reference: now, rate: rate, playing: false, holding: old.holding)
                if old.holding, var kept = previousHold {
                    kept.seq = seq
                    kept.landed = []
                    hold = kept
                }
            }
            notice = Notice(actor: name, action: .speed, rate: rate)
        case .open:
            let switched = beginSwitch(to: action.activity ?? activity, by: name, seq: seq, countdown: 0, now: now)
            next = switched.timeline
            notice = switched.notice
            newActivity = switched.activity
        }
        timeline = next
        var outputs: [Output] = order.map { member in
            .send(member, .applied(timeline: next, notice: notice, actionID: member == id ? action.id : nil, activity: newActivity))
        }
        outputs += announceIfDue(now: now)
        return outputs
    }

    /// New media for everyone: all load it, the group holds at its start until everyone has
    /// (bounded by `openTimeout`), then plays (after `countdown` seconds, at least the lead).
    /// Sets the activity, the hold and the timeline; returns them for the `applied`.
    private mutating func beginSwitch(
        to requested: Activity, by name: String, seq: Int, countdown: Double, now: Double
    ) -> (timeline: GroupTimeline, notice: Notice, activity: Activity) {
        var opened = requested
        opened.id = activity.id + 1
        opened.openedBy = name
        activity = opened
        mediaReference = nil
        mismatchesAnnounced = []
        excused = []
        // New media, new chances: wait for everyone again.
        for key in stalls.keys { stalls[key]?.givenUpUntil = -.infinity }
        let next = GroupTimeline(seq: seq, position: 0, reference: now, rate: timeline.rate, playing: false, holding: true)
        timeline = next
        hold = Hold(
            seq: seq, deadline: now + configuration.openTimeout, needsReadiness: configuration.playWhenReady,
            announceAt: now + configuration.announceDelay, since: now, countdown: countdown)
        return (next, Notice(actor: name, action: .open, title: Activity.clampedTitle(opened.displayTitle)), opened)
    }

    /// Switches everyone to `activity` (its id becomes the next one; `openedBy` becomes `name`)
    /// as an `open` by `name` would, for the server's own reasons (a playlist's next entry): the
    /// group holds at its start until everyone has loaded it (`ready` for the hold, or excused),
    /// bounded by `openTimeout` (then it goes on without the laggards, with a notice), and starts
    /// `countdown` seconds (at least the usual lead) after that, at the same instant for everyone.
    /// Every member gets the `applied` with the new activity and no action id.
    public mutating func switchTo(_ activity: Activity, by name: String, countdown: Double, now: Double) -> [Output] {
        let countdown = countdown.isFinite ? max(0, countdown) : 0
        let (next, notice, opened) = beginSwitch(to: activity, by: name, seq: timeline.seq + 1, countdown: countdown, now: now)
        return broadcast(.applied(timeline: next, notice: notice, actionID: nil, activity: opened)) + announceIfDue(now: now)
    }

    /// The group stops waiting for `ids` while this activity lasts (they said they lack its
    /// media): everyone hears "continuing without …" with `why`, and a hold that waited only for
    /// them ends. Members not waited for already, or unknown, are left out.
    public mutating func excuse(_ ids: [MemberID], why: String, now: Double) -> [Output] {
        let waited = Set(waitedFor(now: now))
        let newly = ids.filter { waited.contains($0) && !excused.contains($0) }
        guard !newly.isEmpty else { return [] }
        excused.formUnion(newly)
        let names = newly.compactMap { members[$0]?.name }
        var outputs = broadcast(.notice(Notice(actor: names[0], action: .continued, others: names, detail: why)))
        outputs += resumeIfNobodyMissing(now: now)
        return outputs
    }

    /// True while `id` is excused for this activity (see `excuse`).
    public func isExcused(_ id: MemberID) -> Bool { excused.contains(id) }

    /// Pauses the group where it is, silently (the `applied` carries no notice): the server's own
    /// stop, e.g. at the end of a playlist.
    public mutating func stop(now: Double) -> [Output] {
        let old = timeline
        hold = nil
        timeline = GroupTimeline(seq: old.seq + 1, position: old.position(at: now), reference: now, rate: old.rate, playing: false)
        return broadcast(.applied(timeline: timeline, notice: nil, actionID: nil))
    }

    // MARK: Holding for participants (bounded)

    private func history(of id: MemberID) -> StallHistory {
        members[id].flatMap { stalls[$0.stallKey] } ?? StallHistory()
    }

    /// Who the group waits for: everyone, minus "don't wait for me", those it recently gave up
    /// on and those excused for this activity.
    private func waitedFor(now: Double) -> [MemberID] {
        order.filter { id in
            guard let member = members[id], !excused.contains(id) else { return false }
            return member.status.waitForMe && now >= history(of: id).givenUpUntil
        }
    }

    /// Why a hold misses someone who is neither stalled nor unready: not on the held position yet.
    static let landing = "getting there"

    /// Waited-for participants a hold still misses, each with why.
    private func missing(hold: Hold, timeline: GroupTimeline, now: Double) -> [(id: MemberID, why: String)] {
        waitedFor(now: now).compactMap { id in
            guard let member = members[id] else { return nil }
            if let stall = member.status.stall { return (id, stall.rawValue) }
            if hold.needsReadiness && !member.status.ready { return (id, "not ready") }
            // A hold that is not the timeline's own (a play that did not need one) needs no landing.
            if timeline.holding && timeline.seq == hold.seq && !hold.landed.contains(id) { return (id, Self.landing) }
            return nil
        }
    }

    public mutating func landed(seq: Int, from id: MemberID, now: Double) -> [Output] {
        guard hold?.seq == seq else { return [] }
        hold?.landed.insert(id)
        return resumeIfNobodyMissing(now: now)
    }

    /// A member's stall, readiness or "wait for me" changed. `mayHold` false: its stall budget is
    /// spent, so a new stall is noted but never holds the group.
    public mutating func statusChanged(_ status: ParticipantStatus, of id: MemberID, mayHold: Bool = true, now: Double) -> [Output] {
        guard let member = members[id] else { return [] }
        let old = member.status
        members[id]?.status = status
        var outputs: [Output] = []
        if status.ready != old.ready {
            outputs += broadcast(.notice(Notice(actor: member.name, action: status.ready ? .ready : .unready)))
        }
        let waited = waitedFor(now: now).contains(id)
        // Loading (a late joiner, or one still opening switched media) does not stop a group that
        // already plays: the loader catches up when ready. Holds for `open` and play wait for it.
        if let stall = status.stall, stall != .loading, old.stall == nil, waited, timeline.playing, hold == nil {
            guard now - member.joinedAt >= configuration.newcomerGrace else {
                // Just arrived: it catches up on its own.
                return outputs
            }
            let recent = history(of: id).holds.filter { now - $0 < configuration.stallWindow }
            if recent.count >= configuration.maxStallHolds || !mayHold {
                // It keeps stalling: stop holding everyone for it (it catches up on its own).
                stalls[member.stallKey] = StallHistory(holds: [], givenUpUntil: now + configuration.giveUpCooldown)
                let notice = Notice(actor: member.name, action: .continued, others: [member.name], detail: "keeps stalling")
                return outputs + broadcast(.notice(notice))
            }
            stalls[member.stallKey, default: StallHistory()].holds = recent + [now]
            // A participant that cannot keep up while the group plays: hold everyone where the
            // group is, say who we wait for, and give it `waitTimeout` to come back.
            let playing = timeline
            timeline = GroupTimeline(
                seq: playing.seq + 1, position: playing.position(at: now), reference: now, rate: playing.rate,
                playing: false, holding: true)
            hold = Hold(seq: timeline.seq, deadline: now + configuration.waitTimeout, since: now)
            let notice = Notice(actor: member.name, action: .waiting, others: [member.name], detail: stall.rawValue)
            return outputs + broadcast(.applied(timeline: timeline, notice: notice, actionID: nil))
        }
        return outputs + resumeIfNobodyMissing(now: now)
    }

    private mutating func resumeIfNobodyMissing(now: Double) -> [Output] {
        guard let hold, missing(hold: hold, timeline: timeline, now: now).isEmpty else { return [] }
        return resume(now: now)
    }

    /// Ends a hold: everyone plays from the held position at a scheduled instant.
    private mutating func resume(now: Double) -> [Output] {
        guard let ended = hold else { return [] }
        let old = timeline
        hold = nil
        timeline = GroupTimeline(
            seq: old.seq + 1, position: old.position, reference: now + max(lead, ended.countdown), rate: old.rate, playing: true)
        return broadcast(.applied(timeline: timeline, notice: nil, actionID: nil))
    }

    /// Says "waiting for …" once per hold, when its announcement is due and someone is missing.
    private mutating func announceIfDue(now: Double) -> [Output] {
        guard let current = hold, let due = current.announceAt, now >= due else { return [] }
        hold?.announceAt = nil
        // Landing takes a moment after any action: only name it once it is late.
        let landingIsLate = now - current.since >= configuration.announceDelay
        let late = missing(hold: current, timeline: timeline, now: now).filter { landingIsLate || $0.why != Self.landing }
        guard let notice = notice(.waiting, about: late) else { return [] }
        return broadcast(.notice(notice))
    }

    /// The hold waited long enough: carry on without whoever is still missing; they catch up on
    /// their own, and are not waited for again for `giveUpCooldown`.
    private mutating func giveUp(now: Double) -> [Output] {
        guard let current = hold else { return [] }
        let late = missing(hold: current, timeline: timeline, now: now)
        for entry in late {
            guard let key = members[entry.id]?.stallKey else { continue }
            stalls[key, default: StallHistory()].givenUpUntil = now + configuration.giveUpCooldown
        }
        let outputs = notice(.continued, about: late).map { broadcast(.notice($0)) } ?? []
        return outputs + resume(now: now)
    }

    /// "waiting for bob and carol (buffering, not ready)" and its "continuing without" twin; nil
    /// when nobody is missing.
    private func notice(_ action: NoticeAction, about late: [(id: MemberID, why: String)]) -> Notice? {
        let names = late.compactMap { members[$0.id]?.name }
        guard let actor = names.first else { return nil }
        let reasons = distinctInOrder(late.map(\.why))
        return Notice(actor: actor, action: action, others: names, detail: reasons.joined(separator: ", "))
    }

    // MARK: Media

    /// Compares a participant's media with the first report for the activity; a difference is
    /// announced to everyone, naming who differs. Playback goes on either way.
    public mutating func mediaReported(_ info: MediaInfo, activity reported: Int, by id: MemberID) -> [Output] {
        guard activity.id == reported, let name = members[id]?.name else { return [] }
        guard let reference = mediaReference, reference.name != name else {
            mediaReference = (name, info)
            return []
        }
        let differences = info.differences(from: reference.info)
        // Once per pair, whichever of the two reports first (a restart must not say it again
        // the other way round).
        let pair = [name, reference.name].sorted().joined(separator: "\u{0}")
        guard !differences.isEmpty, !mismatchesAnnounced.contains(pair) else { return [] }
        mismatchesAnnounced.insert(pair)
        return broadcast(.notice(Notice(
            actor: name, action: .mismatch, others: [reference.name], detail: differences.joined(separator: ", "))))
    }

    // MARK: Time

    /// Runs deadlines: holds that waited long enough, due announcements, participant lists.
    public mutating func tick(now: Double) -> [Output] {
        var outputs = announceIfDue(now: now)
        if let current = hold, now >= current.deadline {
            outputs += giveUp(now: now)
        }
        if now >= nextParticipantsBroadcast {
            nextParticipantsBroadcast = now + configuration.participantsInterval
            let list = participants(now: now)
            if let last = lastParticipants, Self.sameExceptMetrics(last, list) {
                // Only drifts or round trips moved: those refresh at the lower rate.
                if list != last, now - lastParticipantsAt >= configuration.metricsInterval {
                    outputs += sendParticipants(list, now: now)
                }
            } else {
                outputs += sendParticipants(list, now: now)
            }
        }
        let horizon = now - max(configuration.stallWindow, configuration.giveUpCooldown)
        if stalls.count > 4 * max(order.count, 16) {
            // Bounded: forget addresses whose history no longer matters.
            stalls = stalls.filter { $0.value.givenUpUntil > now || $0.value.holds.contains { $0 > horizon } }
        }
        return outputs
    }

    /// When `tick` must run next.
    public func nextDeadline() -> Double {
        [hold?.deadline, hold?.announceAt, nextParticipantsBroadcast].compactMap { $0 }.min() ?? nextParticipantsBroadcast
    }

    // MARK: Views

    /// Who is here and how they are. At `now`, a member not heard from for `silentAfter` reads
    /// `silent` (a dark link; its drift is old), which changes the list, so everyone learns it.
    public func participants(now: Double? = nil) -> [ParticipantInfo] {
        order.compactMap { id in
            guard let member = members[id] else { return nil }
            let landed = hold?.landed.contains(id) == true
            let silent = now.map { $0 - member.heardAt > configuration.silentAfter } ?? false
            return ParticipantInfo(
                name: member.name, state: landed ? "landed" : silent ? "silent" : "joined", drift: member.drift, rtt: member.rtt,
                status: member.status, role: member.role, stream: member.stream)
        }
    }

    private mutating func sendParticipants(_ list: [ParticipantInfo], now: Double) -> [Output] {
        lastParticipants = list
        lastParticipantsAt = now
        return broadcast(.participants(list))
    }

    /// True when the lists differ at most in drifts, round trips and how far streams reach.
    static func sameExceptMetrics(_ a: [ParticipantInfo], _ b: [ParticipantInfo]) -> Bool {
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b)
        where x.name != y.name || x.state != y.state || x.status != y.status || x.role != y.role || x.stream?.from != y.stream?.from {
            return false
        }
        return true
    }

    public func broadcast(_ message: ServerMessage) -> [Output] {
        order.map { .send($0, message) }
    }
}

/// The distinct reasons, in first-seen order.
private func distinctInOrder(_ reasons: [String]) -> [String] {
    var seen: Set<String> = []
    return reasons.filter { seen.insert($0).inserted }
}
