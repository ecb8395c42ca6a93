import HaulCore
import Testing

/// Progress noted between checkpoints (`.noteProgress`) and taken back after a kill
/// (`LocalFiles.noted`), as plain values.
@Suite(.timeLimit(.minutes(1))) struct NotedProgressTests {
    typealias Machine = DownloadStateMachine
    let url = try! RemoteURL("http://h/file")

    func machine(notes: Bool, segments: [Segment] = [], totalLength: Int64? = nil, range: ByteRange? = nil) throws
        -> Machine
    {
        let request = try DownloadRequest(url: url, destination: .directory("/tmp"), range: range)
        var record = DownloadRecord(id: DownloadID(rawValue: "1"), request: request, createdAt: 0)
        record.fileName = "file"
        record.totalLength = totalLength
        record.validator = EntityValidator(etag: "\"a\"")
        if !segments.isEmpty { record.segments = segments }
        return Machine(
            record: record,
            settings: .init(checkpointInterval: 1, tickInterval: 0.25, notesProgress: notes, noteBytes: 250))
    }

    @Test func ticksBetweenCheckpointsNoteProgressOnlyWhenBytesCameAndOnlyWhenAsked() throws {
        for notes in [false, true] {
            var machine = try machine(notes: notes)
            _ = machine.start(.init(partSize: nil, published: false), now: 0)
            _ = machine.responseReceived(
                0,
                ResponseHead(status: 200, headers: ["Content-Length": "1000", "ETag": "\"a\""], url: "http://h/file"),
                nowSecondsSince1970: 0, jitter: 0)
            _ = machine.received(0, count: 100)
            #expect(machine.tick(now: 0.25, elapsed: 0.25) == (notes ? [.noteProgress] : []))
            #expect(machine.tick(now: 0.5, elapsed: 0.25) == [], "no new byte, nothing to note")
            _ = machine.received(0, count: 100)
            #expect(
                machine.tick(now: 1.0, elapsed: 0.5) == [.backgroundCheckpoint(epoch: machine.epoch)],
                "a due checkpoint wins")
        }
    }

    /// A small file is never noted: a tick notes a quarter of `noteBytes` or more since the last
    /// checkpoint (less is refetched in a moment after a kill; each note was a file made and
    /// removed in the state directory).
    @Test func aTickNotesNothingBelowAQuarterOfTheNoteBytes() throws {
        var machine = try machine(notes: true)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        _ = machine.responseReceived(
            0,
            ResponseHead(status: 200, headers: ["Content-Length": "1000", "ETag": "\"a\""], url: "http://h/file"),
            nowSecondsSince1970: 0, jitter: 0)
        _ = machine.received(0, count: 50)
        #expect(machine.tick(now: 0.25, elapsed: 0.25) == [], "50 bytes, under 250 / 4")
        _ = machine.received(0, count: 12)
        #expect(machine.tick(now: 0.5, elapsed: 0.25) == [.noteProgress], "62 bytes since the checkpoint")
    }

    @Test func aBurstMakesANoteDueBeforeTheTick() throws {
        for notes in [false, true] {
            var machine = try machine(notes: notes)
            _ = machine.start(.init(partSize: nil, published: false), now: 0)
            _ = machine.responseReceived(
                0,
                ResponseHead(status: 200, headers: ["Content-Length": "1000", "ETag": "\"a\""], url: "http://h/file"),
                nowSecondsSince1970: 0, jitter: 0)
            // 100-byte chunks, a note due once 250 bytes came since the last: the third and the sixth.
            let due = (0..<6).map { _ in machine.received(0, count: 100).noteDue }
            #expect(due == (notes ? [false, false, true, false, false, true] : Array(repeating: false, count: 6)))
            #expect(machine.noteRequested() == (notes ? [.noteProgress] : []))
            #expect(machine.noteRequested() == [], "nothing new since")
        }
    }

    @Test func aFastDownloadNotesAboutTwentyTimesASecondAtMost() throws {
        var machine = try machine(notes: true, totalLength: 100_000_000)
        _ = machine.start(.init(partSize: nil, published: false), now: 0)
        _ = machine.responseReceived(
            0,
            ResponseHead(status: 200, headers: ["Content-Length": "100000000", "ETag": "\"a\""], url: "http://h/file"),
            nowSecondsSince1970: 0, jitter: 0)
        // 400,000 bytes in the first quarter second: 1.6 MB/s, so 80,000 bytes make a note due.
        _ = machine.received(0, count: 400_000)
        _ = machine.tick(now: 0.25, elapsed: 0.25)
        #expect(machine.received(0, count: 79_000).noteDue == false)
        #expect(machine.received(0, count: 1_000).noteDue == true)
        // Slow again (the speed is a moving average): back towards `noteBytes` at the next ticks.
        for tick in 2...12 { _ = machine.tick(now: 0.25 * Double(tick), elapsed: 0.25) }
        #expect(machine.received(0, count: 250).noteDue == true)
    }

    @Test func aStartTakesNotedBytesWithinThePartAndTheFile() throws {
        // Two parts of a 1,000-byte file, checkpointed at 100 and 600 (of 500...999).
        var machine = try machine(
            notes: true,
            segments: [
                Segment(start: 0, end: 499, written: 100),
                Segment(start: 500, end: 999, written: 100),
            ], totalLength: 1000)
        // Noted: part 0 up to 300 (more than the checkpoint), part 500 up to 1,200 (beyond its end
        // and the file), a part the record does not have (a split never stored) is ignored.
        let actions = machine.start(
            .init(partSize: 900, published: false, noted: [0: 300, 500: 1200, 700: 800]), now: 0)
        #expect(
            machine.persistentRecord.segments == [
                Segment(start: 0, end: 499, written: 300), Segment(start: 500, end: 999, written: 400),
            ])
        #expect(actions.first == .persist, "stored before any request: the runner synced those bytes")
        let plans = actions.compactMap { if case .request(_, let plan) = $0 { plan } else { nil } }
        #expect(plans.first?.range?.start == 300, "the first connection resumes where the note says")
    }

    @Test func aNoteBehindTheCheckpointChangesNothing() throws {
        var machine = try machine(notes: true, segments: [Segment(start: 0, end: 999, written: 500)], totalLength: 1000)
        _ = machine.start(.init(partSize: 500, published: false, noted: [0: 200]), now: 0)
        #expect(machine.persistentRecord.segments == [Segment(start: 0, end: 999, written: 500)])
    }

    @Test func aRangeDownloadsNoteIsInFileOffsets() throws {
        // `--range 1000-1999`: the file's byte 0 is the remote byte 1000.
        var machine = try machine(
            notes: true, segments: [Segment(start: 1000, end: 1999, written: 0)],
            range: ByteRange(start: 1000, end: 1999))
        _ = machine.start(.init(partSize: 400, published: false, noted: [1000: 400]), now: 0)
        #expect(machine.persistentRecord.segments == [Segment(start: 1000, end: 1999, written: 400)])
    }
}
