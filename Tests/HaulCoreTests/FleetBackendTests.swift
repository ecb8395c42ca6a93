import HaulCore
import Testing

/// A fleet host's clock, decided by the queue on plain seconds (`FleetBackend`): when it renews,
/// when it claims, how long an outage lasts, and how long a pause or remove asked of another host
/// may take. No database, no server, no sleep.
@Suite(.timeLimit(.minutes(1))) struct FleetBackendTests {
    typealias Queue = DownloadQueue

    static func id(_ name: String) -> DownloadID { DownloadID(rawValue: name) }

    /// A renewal every interval; between them a tick claims for free slots; a notice of another
    /// host's command makes the next tick renew at once.
    @Test func ticksRenewWhenDueAndClaimBetween() {
        var queue = Queue.fleet(limit: 2, renewInterval: .seconds(5), leaseTimeout: .seconds(60))
        #expect(queue.tick(now: 10) == [.renewLeases])
        #expect(queue.renewed(LeaseReport(), now: 10) == [.claim(limit: 2, excluding: [])])
        #expect(queue.tick(now: 11) == [.claim(limit: 2, excluding: [])])
        #expect(queue.tick(now: 14.9) == [.claim(limit: 2, excluding: [])])
        #expect(queue.tick(now: 15) == [.renewLeases])
        // Another host left a command: renew at the next tick, not at 20.
        #expect(queue.commandNoticed() == [.wakeClaims])
        #expect(queue.tick(now: 15.5) == [.renewLeases])
        #expect(queue.tick(now: 16) == [.claim(limit: 2, excluding: [])])
        // Full: a tick between renewals does nothing.
        _ = queue.claimed([Self.id("a"), Self.id("b")], limit: 2)
        #expect(queue.tick(now: 17) == [])
        // Shutting down: nothing is renewed or claimed any more.
        _ = queue.shutdown()
        #expect(queue.tick(now: 30) == [])
    }

    /// The renewal interval is at most a quarter of a lease, and the loop wakes at least every
    /// second (claims look for work whatever the renewal's pace).
    @Test func theRenewalFitsFourTimesInALease() throws {
        guard
            case .fleet(let slow) = Queue.fleet(limit: 1, renewInterval: .seconds(60), leaseTimeout: .seconds(20))
                .backend
        else { throw HaulError(.internal, "not a fleet") }
        #expect(slow.renewInterval == .seconds(5))
        #expect(slow.wakeInterval == .seconds(1))
        guard case .fleet(let fast) = Queue.fleet(limit: 1, renewInterval: .milliseconds(200)).backend else {
            throw HaulError(.internal, "not a fleet")
        }
        #expect(fast.wakeInterval == .milliseconds(200))
    }

    /// A pause asked of another host is answered once the record shows it, or once the download
    /// ended meanwhile; not carried out within ten seconds it is a `conflict` naming the host (the
    /// command stays stored for it). Two callers waiting for one download are answered each.
    @Test func aRemotePauseIsAnsweredOrRefusedAfterTenSeconds() {
        var queue = Queue.fleet(limit: 1)
        let first = queue.remoteAsked(.pause, of: Self.id("x"), now: 100)
        let second = queue.remoteAsked(.pause, of: Self.id("x"), now: 105)
        #expect(first != second)
        #expect(queue.remoteSeen(first, status: .running, holder: "b", now: 101) == [])
        #expect(queue.remoteSeen(first, status: .running, holder: "b", now: 109.9) == [])
        let refused = queue.remoteSeen(first, status: .running, holder: "b", now: 110)
        guard case .remoteRefused(let ask, let error) = refused.first else {
            Issue.record("not refused: \(refused)")
            return
        }
        #expect(refused.count == 1 && ask == first)
        #expect(error.code == .conflict)
        #expect(error.message.contains("held by b, which has not applied it yet; it will at its next renewal"))
        // Answered once: a later reading for the same wait says nothing more.
        #expect(queue.remoteSeen(first, status: .paused, holder: "b", now: 111) == [])
        // The second caller's ten seconds run from its own ask: b applied it meanwhile.
        #expect(queue.remoteSeen(second, status: .paused, holder: "b", now: 111) == [.remoteAnswered(second)])
    }

    /// A remove is answered by `removed`, or by the download ending otherwise (it completed
    /// before its host heard the command); a pause is not answered by a remove's status alone
    /// unless it is terminal, and an abandoned wait is forgotten.
    @Test func aRemoteRemoveIsAnsweredByTheRecordsEnd() {
        var queue = Queue.fleet(limit: 1)
        let remove = queue.remoteAsked(.remove, of: Self.id("y"), now: 0)
        #expect(queue.remoteSeen(remove, status: .paused, holder: "b", now: 1) == [])
        #expect(queue.remoteSeen(remove, status: .removed, holder: "b", now: 2) == [.remoteAnswered(remove)])
        let done = queue.remoteAsked(.removeWithFile, of: Self.id("z"), now: 0)
        #expect(queue.remoteSeen(done, status: .completed, holder: nil, now: 3) == [.remoteAnswered(done)])
        let gone = queue.remoteAsked(.pause, of: Self.id("w"), now: 0)
        queue.remoteAbandoned(gone)
        #expect(queue.remoteSeen(gone, status: .running, holder: "b", now: 60) == [])
        // No holder known (its lease ended between the ask and the read): still a conflict, in words.
        let unknown = queue.remoteAsked(.remove, of: Self.id("v"), now: 0)
        let refused = queue.remoteSeen(unknown, status: .queued, holder: nil, now: 10)
        guard case .remoteRefused(_, let error) = refused.first else {
            Issue.record("not refused: \(refused)")
            return
        }
        #expect(error.message.contains("held by another host"))
    }
}
