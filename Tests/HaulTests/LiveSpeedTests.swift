import HaulCore
import Testing

@testable import Haul

/// The live speed of a download that runs again after a pause: its run stores `running` at once,
/// and its meter has no rate before its second tick, so the daemon's summary (aria2's
/// `getGlobalStat`) counted it running at a speed of 0 while its bytes flowed.
@Suite struct LiveSpeedTests {
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
        // The next run stores `running` before its first tick ...
        live.saved(try record(.running))
        #expect(live.progress(id)?.bytesPerSecond == 1_000)
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
        live.saved(try record(.running))
        #expect(live.progress(id) == nil)
        live.note(progress(0))
        #expect(live.progress(id)?.bytesPerSecond == 0)
    }
}
