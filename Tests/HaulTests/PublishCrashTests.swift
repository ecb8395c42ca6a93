import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `kill -9` can land between the moment the verified `.part` gets its final name and the
/// moment the store says `completed`. The restarted process must finish the job from what is on
/// disk, without downloading the file again and without failing on its own final file.
@Suite(.timeLimit(.minutes(2))) struct PublishCrashTests {
    enum Moment: String, CaseIterable, Sendable {
        /// Verified and checkpointed, not yet published: only `NAME.part` exists.
        case beforePublish
        /// `NAME` was linked to the `.part`, whose name was not yet removed: both names, one file.
        case betweenLinkAndUnlink
        /// Published (only `NAME`), but the record still says running.
        case afterPublish
    }

    @Test(arguments: Moment.allCases)
    func restartAfterACrashAroundPublishFinishesWithoutRefetching(_ moment: Moment) async throws {
        try await withHarness { harness in
            let payload = Payload(seed: 77, length: 300_000)
            harness.server.setRoute("/crash.bin", Route(payload: payload))
            // With a checksum, so the restarted run has something real to verify.
            let checksum = try Checksum(parsing: "sha-256=" + payload.sha256)
            let first = try await harness.download(harness.request("/crash.bin", checksum: checksum))
            #expect(first.final.isCompleted)
            let final = try #require(first.path)
            let part = final + ".part"

            // The files and the stored record as the crash left them.
            var record = first.record
            record.status = .running
            try await harness.store.save(record)
            switch moment {
            case .beforePublish: #expect(rename(final, part) == 0)
            case .betweenLinkAndUnlink: #expect(link(final, part) == 0)
            case .afterPublish: break
            }
            let requestsBefore = harness.server.requests(to: "/crash.bin").count

            let manager = try await harness.restartedManager()
            try await manager.restore()
            let ended = try await manager.outcome(of: record.id)
            await manager.shutdown()

            #expect(ended.status == .completed, "\(ended)")
            #expect(harness.server.requests(to: "/crash.bin").count == requestsBefore)
            #expect(harness.listing() == ["crash.bin"])
            #expect(payload.mismatch(inFileAt: final) == nil)
            #expect(try await harness.store.record(record.id)?.status == .completed)
        }
    }
}
