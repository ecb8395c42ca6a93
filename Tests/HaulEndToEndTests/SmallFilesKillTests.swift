import Foundation
import HaulCore
import HaulTesting
import Testing

/// `kill -9` while 2,000 small files download at `-j 16`, among large ones with long transfers
/// (issue 48, requirement 2): whatever the moment, no file is published incomplete, no download
/// is stored completed without its file, and a download completed before a kill is never fetched
/// again.
@Suite(.timeLimit(.minutes(10))) struct SmallFilesKillTests {
    static let small = 2_000
    static let large = 4

    @Test func killsLoseNoCompletedFileAndPublishNoIncompleteOne() async throws {
        let world = try await World.make()
        var payloads: [String: Payload] = [:]
        var lines: [String] = []
        for index in 0..<Self.large {
            // 8 MiB at 2 MiB/s: each run lasts seconds, and each kill finds them mid-transfer.
            let payload = Payload(seed: UInt64(90_000 + index), length: 8 << 20)
            world.server.setRoute("/large/big\(index).bin", Route(payload: payload, throttle: 2 << 20))
            payloads["big\(index).bin"] = payload
            lines.append(world.server.url("/large/big\(index).bin"))
        }
        for index in 0..<Self.small {
            let payload = Payload(seed: UInt64(index + 1), length: 16 << 10)
            world.server.setRoute("/small/f\(index).bin", Route(payload: payload))
            payloads["f\(index).bin"] = payload
            lines.append(world.server.url("/small/f\(index).bin"))
        }
        let list = (world.directory as NSString).deletingLastPathComponent + "/list.txt"
        try (lines.joined(separator: "\n") + "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let arguments = ["get", "-q", "-j", "16", "-i", list]

        for target in [200, 800, 1_400] {
            let run = try HaulProcess(arguments, home: world.home, workingDirectory: world.directory)
            // Bounded, not timed: the store's count of completed downloads is the state waited for.
            for _ in 0..<4_000 {
                let records = (try? await world.storedRecords()) ?? []
                if records.count(where: { $0.status == .completed }) >= target { break }
                try await Task.sleep(for: .milliseconds(25))
            }
            run.signal(SIGKILL)
            #expect(await run.wait() == SIGKILL, "killed mid-list at \(target) completed")
            try await check(payloads, in: world, after: target)
        }

        let last = try await HaulProcess.run(arguments, in: world)
        #expect(last.status == 0, "\(last.stderr.prefix(2_000))")
        #expect(world.files().sorted() == payloads.keys.sorted(), "every file, no .part left")
        for (name, payload) in payloads {
            #expect(payload.mismatch(inFileAt: world.directory + "/" + name) == nil, "\(name)")
        }
        // A small file completed before a kill is not asked for again: at most those in flight at
        // each of the three kills (16 in slots, 16 finishing, 16 sent past -j as probes, their
        // finishes included) are asked twice.
        let smallRequests = world.server.requests.count { $0.path.hasPrefix("/small/") }
        #expect(smallRequests >= Self.small)
        #expect(smallRequests <= Self.small + 3 * 48, "\(smallRequests) requests for \(Self.small) small files")
        try await world.close()
    }

    /// After a kill: every file under its final name is whole and right, and every download the
    /// store holds completed has its file there.
    func check(_ payloads: [String: Payload], in world: World, after target: Int) async throws {
        for name in world.files() where !name.hasSuffix(".part") {
            let payload = try #require(payloads[name], "\(name): a file nobody asked for")
            #expect(payload.mismatch(inFileAt: world.directory + "/" + name) == nil, "\(name) after \(target)")
        }
        let completed = try await world.storedRecords().filter { $0.status == .completed }
        #expect(completed.count >= target, "the store lost completions: \(completed.count) after \(target)")
        for record in completed {
            let name = try #require(record.fileName, "\(record.id) completed without a name")
            #expect(
                payloads[name]?.mismatch(inFileAt: world.directory + "/" + name) == nil,
                "\(name) is stored completed but its file is missing or wrong after \(target)")
        }
    }
}
