import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// The live speed of a download that runs again after a pause: its run stores `running` at once,
/// and its meter has no rate before its second tick, so the daemon's summary (aria2's
/// `getGlobalStat`) counted it running at a speed of 0 while its bytes flowed.
@Suite(.timeLimit(.minutes(1))) struct LiveSpeedTests {
    private let id = DownloadID(rawValue: "live-speed")

    private func record(_ status: DownloadStatus) throws -> DownloadRecord {
        var record = DownloadRecord(
            id: id, request: try DownloadRequest(url: RemoteURL("http://x/f"), destination: .directory("/d")),
            createdAt: 0)
        record.status = status
        return record
    }

    private func progress(_ speed: Double) -> DownloadEvent {
        DownloadEvent(id: id, kind: .progress(Progress(completed: 10, total: 100, bytesPerSecond: speed)))
    }

    @Test func aResumedRunShowsTheSpeedItStoppedAtUntilItHasItsOwn() throws {
        let live = LiveProgress()
        live.note(progress(1_000))
        live.note(DownloadEvent(id: id, kind: .paused))
        #expect(live.progress(id) == nil, "a paused download has no live figures")
        live.ended(id)
        // The next run stores `running` before its first tick: shown from before the store has
        // it (a summary reads the store's running downloads, then their live speeds) ...
        live.saving(try record(.running))
        #expect(live.progress(id)?.bytesPerSecond == 1_000)
        live.saved(try record(.running))
        #expect(live.all()[id]?.bytesPerSecond == 1_000)
        // ... and its first tick has no rate yet (one sample).
        live.note(progress(0))
        #expect(live.progress(id)?.bytesPerSecond == 1_000)
        live.note(progress(2_000))
        #expect(live.progress(id)?.bytesPerSecond == 2_000)
    }

    /// A download that ended for good leaves no speed behind for a later run; a new one (no
    /// speed known) shows 0 until its meter has a rate.
    @Test func aFinishedDownloadLeavesNoSpeedBehind() throws {
        let live = LiveProgress()
        live.note(progress(1_000))
        live.note(DownloadEvent(id: id, kind: .paused))
        live.note(progress(500))
        live.note(DownloadEvent(id: id, kind: .removed))
        live.ended(id)
        live.saving(try record(.running))
        live.saved(try record(.running))
        #expect(live.progress(id) == nil)
        live.note(progress(0))
        #expect(live.progress(id)?.bytesPerSecond == 0)
    }

    /// A run's first tick has a rate: the meter's first sample is the transfer's start. It was the
    /// first tick, and a lone sample has no rate: every run (a new one too) said 0 at its first
    /// tick while its bytes flowed.
    @Test func aRunsFirstTickHasARate() async throws {
        let clock = ManualClock()
        try await withHarness(clock: ClockAdapter(clock)) { harness in
            harness.server.setRoute("/slow", Route(payload: Payload(seed: 61, length: 5_000_000), throttle: 200_000))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/slow"))
            // Bytes flow (the server's throttle runs on real time); no tick has come yet.
            #expect(await harness.server.wait { $0.bodyBytesSent(to: "/slow") > 50_000 })
            // The run's ticker sleeps one tick (the progress and checkpoint intervals) at a time
            // on the manual clock: each time it does, the clock goes to its deadline, until the
            // first tick that finds the transfer under way has told its progress.
            let interval = min(harness.configuration.progressInterval, harness.configuration.checkpointInterval)
            let ticks = Task {
                while !Task.isCancelled,
                    await clock.waitForSleepers(where: { $0.contains(clock.now.advanced(by: interval)) })
                {
                    clock.advance(by: interval)
                }
            }
            // The first tick that finds bytes received: under load the client may not have read
            // what the server sent when the first tick comes (it then tells 0 bytes; the next
            // one has a rate whatever the meter's first sample was, so this catches the old
            // fault only when the first tick has bytes, as it does on an idle machine).
            var first: Progress?
            for await event in events where event.id == record.id {
                if case .progress(let progress) = event.kind, progress.completed > 0 {
                    first = progress
                    break
                }
            }
            ticks.cancel()
            let progress = try #require(first)
            #expect(progress.completed > 0)
            #expect(progress.bytesPerSecond > 0, "\(progress)")
        }
    }
}
