import Foundation
import HaulCore
import HaulTesting
import Testing

/// Long URL lists, as aria2's users feed them to `-i`: every download's end is seen (the
/// command used to wait forever once more final events came than its event buffer kept), every
/// file is right, and a re-run of a finished list sends nothing.
@Suite(.timeLimit(.minutes(10))) struct ManyURLsTests {
    /// Distinct paths (so distinct names), small files: the cost is per download.
    func serve(_ count: Int, in world: World) throws -> (list: String, payloads: [Payload]) {
        var lines: [String] = []
        var payloads: [Payload] = []
        for index in 0..<count {
            let payload = Payload(seed: UInt64(index + 1), length: 1024 + Int64(index % 7))
            world.server.setRoute("/many/f\(index).bin", Route(payload: payload))
            payloads.append(payload)
            lines.append(world.server.url("/many/f\(index).bin"))
        }
        let list = (world.directory as NSString).deletingLastPathComponent + "/list.txt"
        try (lines.joined(separator: "\n") + "\n").write(toFile: list, atomically: true, encoding: .utf8)
        return (list, payloads)
    }

    func check(_ payloads: [Payload], in world: World) {
        var wrong = 0
        for (index, payload) in payloads.enumerated()
        where payload.mismatch(inFileAt: world.directory + "/f\(index).bin") != nil {
            wrong += 1
        }
        #expect(wrong == 0, "\(wrong) files missing or wrong")
        #expect(world.files().count == payloads.count, "no .part and no extra file is left")
    }

    @Test func twentyThousandURLsEndAndAReRunSendsNothing() async throws {
        let world = try await World.make()
        let (list, payloads) = try serve(20_000, in: world)

        let first = try await HaulProcess.run(["get", "-q", "-j", "16", "-i", list], in: world)
        #expect(first.status == 0, "\(first.stderr.prefix(2000))")
        #expect(first.stderr.isEmpty, "quiet: \(first.stderr.prefix(2000))")
        check(payloads, in: world)
        let served = world.server.requests.count
        #expect(served == payloads.count, "one request per file")

        let again = try await HaulProcess.run(["get", "-q", "-j", "16", "-i", list], in: world)
        #expect(again.status == 0, "\(again.stderr.prefix(2000))")
        #expect(world.server.requests.count == served, "a finished list is not asked for again")
        check(payloads, in: world)
        try await world.close()
    }

    /// `--json` prints every download's end exactly once, even when far more events come than
    /// the event stream buffers, and the first failure decides the exit status.
    @Test func jsonReportsEveryEndExactlyOnce() async throws {
        let world = try await World.make()
        let (list, payloads) = try serve(6_000, in: world)
        let missing = world.server.url("/many/missing.bin")
        try (String(contentsOfFile: list, encoding: .utf8) + missing + "\n").write(
            toFile: list, atomically: true, encoding: .utf8)

        let run = try await HaulProcess.run(["get", "--json", "-j", "16", "-i", list, "--retries", "1"], in: world)
        #expect(run.status == ExitCodesExpected.http, "\(run.stderr.prefix(2000))")
        var ends: [String: [String]] = [:]
        for line in run.stdout.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let type = object["type"] as? String, let url = object["url"] as? String,
                ["completed", "alreadyComplete", "failed", "paused", "removed", "interrupted"].contains(type)
            else { continue }
            ends[url, default: []].append(type)
        }
        #expect(ends.count == payloads.count + 1, "one end per URL")
        #expect(ends.values.allSatisfy { $0.count == 1 }, "never twice")
        #expect(ends[missing] == ["failed"])
        #expect(ends.filter { $0.value == ["completed"] }.count == payloads.count)
        check(payloads, in: world)
        try await world.close()
    }
}
