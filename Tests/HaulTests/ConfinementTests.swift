import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// The real engine with its download directory as the allowed root (as the daemon runs it):
/// links planted before the add, while queued and between a pause and a resume never lead a
/// byte out of the root (issue 19). Next to the destination, `outside/victim.txt` must stay as
/// it was.
@Suite(.timeLimit(.minutes(2))) struct ConfinementTests {
    let payload = Payload(seed: 19, length: 600_000)

    private func outside(_ harness: Harness) throws -> String {
        let path = (harness.directory as NSString).deletingLastPathComponent + "/outside"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path + "/victim.txt"))
        return path
    }

    private func intact(_ path: String) -> Bool {
        (try? String(contentsOfFile: path, encoding: .utf8)) == "precious"
    }

    @Test(arguments: [false, true])
    func aPlantedPartLinkForAnExplicitNameIsRefused(confined: Bool) async throws {
        try await withHarness(confined: confined) { harness in
            let outside = try outside(harness)
            harness.server.setRoute("/name.bin", Route(payload: payload))
            try FileManager.default.createSymbolicLink(
                atPath: harness.directory + "/name.bin.part",
                withDestinationPath: "../outside/victim.txt")
            let outcome = try await harness.download(harness.request("/name.bin", output: "name.bin"))
            #expect(outcome.final.failure?.code == .forbidden, "\(outcome.final)")
            #expect(intact(outside + "/victim.txt"))
            #expect(!FileManager.default.fileExists(atPath: harness.directory + "/name.bin"), "nothing published")
        }
    }

    @Test func aDirectoryReplacedByALinkWhileQueuedIsRefused() async throws {
        try await withHarness(maxConcurrent: 1, confined: true) { harness in
            let outside = try outside(harness)
            try FileManager.default.createDirectory(atPath: outside + "/x", withIntermediateDirectories: true)
            harness.server.setRoute("/slow.bin", Route(payload: payload, throttle: 100_000))
            harness.server.setRoute("/later.bin", Route(payload: payload))
            let events = harness.manager.events()
            let first = try await harness.manager.add(harness.request("/slow.bin"))
            let queued = try await harness.manager.add(
                harness.request("/later.bin", directory: harness.directory + "/later"))
            #expect(try await harness.manager.record(queued.id)?.status == .queued)
            try FileManager.default.createSymbolicLink(
                atPath: harness.directory + "/later", withDestinationPath: "../outside/x")
            try await harness.manager.pause(first.id)
            let outcome = try await harness.waitForEnd(of: queued.id, in: events)
            #expect(outcome.final.failure?.code == .forbidden, "\(outcome.final)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside + "/x").isEmpty)
            #expect(harness.server.requests(to: "/later.bin").isEmpty, "refused before any request")
        }
    }

    @Test func aLinkPlantedBetweenAPauseAndAResumeIsRefusedAndKeepsTheProgress() async throws {
        try await withHarness(confined: true) { harness in
            let outside = try outside(harness)
            // The first body stops at 300,000 bytes: the pause lands midway however slow the machine.
            harness.server.setRoute("/big.bin", Route(payload: payload, script: [.stallAfter(300_000)]))
            let directory = harness.directory + "/sub"
            let events = harness.manager.events()
            let added = try await harness.manager.add(
                harness.request("/big.bin", output: "big.bin", directory: directory))
            await harness.waitForProgress(of: added.id, beyond: 100_000, in: harness.manager.events())
            try await harness.manager.pause(added.id)
            _ = try await harness.waitForEnd(of: added.id, in: events)
            let paused = try #require(try await harness.manager.record(added.id))
            // The directory moves out of the root and a link to it takes its place.
            try FileManager.default.moveItem(atPath: directory, toPath: outside + "/sub")
            try FileManager.default.createSymbolicLink(atPath: directory, withDestinationPath: "../outside/sub")
            let sizeBefore =
                try FileManager.default.attributesOfItem(atPath: outside + "/sub/big.bin.part")[.size] as? Int
            let resumed = harness.manager.events()
            try await harness.manager.resume(added.id)
            let outcome = try await harness.waitForEnd(of: added.id, in: resumed)
            #expect(outcome.final.failure?.code == .forbidden, "\(outcome.final)")
            let sizeAfter =
                try FileManager.default.attributesOfItem(atPath: outside + "/sub/big.bin.part")[.size] as? Int
            #expect(sizeAfter == sizeBefore, "not a byte written through the link")
            #expect(!FileManager.default.fileExists(atPath: outside + "/sub/big.bin"))
            // The stored progress survives the refusal: put the directory back and it resumes.
            #expect(try await harness.manager.record(added.id)?.completedLength == paused.completedLength)
            try FileManager.default.removeItem(atPath: directory)
            try FileManager.default.moveItem(atPath: outside + "/sub", toPath: directory)
            let again = harness.manager.events()
            try await harness.manager.resume(added.id)
            let done = try await harness.waitForEnd(of: added.id, in: again)
            #expect(done.final.isCompleted, "\(done.final)")
            #expect(payload.mismatch(inFileAt: directory + "/big.bin") == nil)
            #expect(intact(outside + "/victim.txt"))
        }
    }
}
