import Foundation
import HaulCore
import HaulStore
import HaulTesting
import Testing

@testable import Haul

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A killed process costs a tick of transfer, not a checkpoint interval (issue 19): what it
/// noted without fsync is trusted on the same boot, for the same `.part` and entity, and only
/// the fsynced checkpoint after a reboot.
///
/// The state a `kill -9` leaves is built from a real run: a download paused at a checkpoint,
/// then its stored progress set back (the checkpoint that lagged) and a note written that
/// claims what the `.part` really holds.
@Suite(.timeLimit(.minutes(2))) struct KillCostTests {
    let payload = Payload(seed: 44, length: 600_000)

    struct Killed {
        var id: DownloadID
        var partPath: String
        var partSize: Int64
    }

    /// A download that got past 300,000 bytes, left as a kill leaves it: the store says
    /// running at 100,000, the note says the `.part`'s real size.
    func killedDownload(_ harness: Harness, noteBoot: String = "boot-A") async throws -> Killed {
        // The body stops at 400,000 bytes: the pause lands midway however slow the machine.
        harness.server.setRoute("/k.bin", Route(payload: payload, script: [.stallAfter(400_000)]))
        let events = harness.manager.events()
        let added = try await harness.manager.add(harness.request("/k.bin", output: "k.bin"))
        await harness.waitForProgress(of: added.id, beyond: 300_000, in: harness.manager.events())
        try await harness.manager.pause(added.id)
        _ = try await harness.waitForEnd(of: added.id, in: events)
        await harness.manager.shutdown()
        var record = try #require(try await harness.store.record(added.id))
        let partPath = harness.directory + "/k.bin.part"
        let partSize = try #require(try FileManager.default.attributesOfItem(atPath: partPath)[.size] as? Int64)
        #expect(partSize > 300_000 && partSize < payload.length, "paused midway")
        record.status = .running
        record.segments = [Segment(start: 0, end: payload.length - 1, written: 100_000)]
        try await harness.store.save(record)
        var info = stat()
        #expect(lstat(partPath, &info) == 0)
        let notes = ProgressNotes(directory: harness.stateDirectory + "/progress", boot: noteBoot)
        try notes.write(added.id, tag: .init(boot: noteBoot, part: info, record: record), written: [0: partSize])
        return Killed(id: added.id, partPath: partPath, partSize: partSize)
    }

    /// Restarts with `bootID`, returns the offset the first request resumed from once complete.
    func restart(_ harness: Harness, _ killed: Killed, bootID: String) async throws -> String? {
        let before = harness.server.requests(to: "/k.bin").count
        harness.server.setRoute("/k.bin", Route(payload: payload))
        let manager = try await harness.restartedManager(bootID: bootID)
        try await manager.restore()
        let ended = try await manager.outcome(of: killed.id)
        await manager.shutdown()
        #expect(ended.status == .completed, "\(ended)")
        #expect(payload.mismatch(inFileAt: harness.directory + "/k.bin") == nil, "byte-exact")
        #expect(
            !FileManager.default.fileExists(atPath: harness.stateDirectory + "/progress/\(killed.id)"),
            "the note is gone")
        return harness.server.requests(to: "/k.bin").dropFirst(before).first?.range
    }

    @Test func onTheSameBootTheNoteIsTrusted() async throws {
        try await withHarness(bootID: "boot-A") { harness in
            let killed = try await killedDownload(harness)
            #expect(
                try await restart(harness, killed, bootID: "boot-A") == "bytes=\(killed.partSize)-\(payload.length - 1)"
            )
        }
    }

    @Test func afterARebootOnlyTheCheckpointCounts() async throws {
        try await withHarness(bootID: "boot-A") { harness in
            let killed = try await killedDownload(harness)
            #expect(try await restart(harness, killed, bootID: "boot-B") == "bytes=100000-\(payload.length - 1)")
        }
    }

    @Test func aNoteAboutAnotherFileIsIgnored() async throws {
        try await withHarness(bootID: "boot-A") { harness in
            let killed = try await killedDownload(harness)
            // The same bytes under the same name, but another file (a copy put in its place).
            let copy = killed.partPath + ".copy"
            try FileManager.default.copyItem(atPath: killed.partPath, toPath: copy)
            #expect(rename(copy, killed.partPath) == 0)
            #expect(try await restart(harness, killed, bootID: "boot-A") == "bytes=100000-\(payload.length - 1)")
        }
    }

    @Test func aRunNotesItsProgressWhileItRuns() async throws {
        try await withHarness(checkpointInterval: .seconds(3600), bootID: "boot-A") { harness in
            harness.server.setRoute("/n.bin", Route(payload: payload, script: [.stallAfter(300_000)]))
            let events = harness.manager.events()
            let added = try await harness.manager.add(harness.request("/n.bin", output: "n.bin"))
            // A tick that finds new bytes tells them, then notes them; the run takes its next
            // input (the next tick) only once that note is written.
            await harness.waitForProgress(of: added.id, beyond: 150_000, in: events)
            await harness.waitForProgress(of: added.id, beyond: 0, in: events)
            // With checkpoints an hour apart, only the notes tell the progress.
            let notes = ProgressNotes(directory: harness.stateDirectory + "/progress", boot: "boot-A")
            var info = stat()
            #expect(lstat(harness.directory + "/n.bin.part", &info) == 0)
            var tagged = try #require(try await harness.manager.record(added.id))
            tagged.validator = EntityValidator(etag: Route.defaultETag(for: payload))
            tagged.totalLength = payload.length
            let noted = notes.read(added.id, tag: .init(boot: "boot-A", part: info, record: tagged))
            #expect(noted[0] ?? 0 >= 100_000, "noted: \(noted)")
            #expect(
                try await harness.store.record(added.id)?.completedLength == 0, "no checkpoint claimed anything yet")
        }
    }
}
