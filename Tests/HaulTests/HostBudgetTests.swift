import Foundation
import Haul
import HaulCore
import HaulTesting
import Testing

/// `--max-connections-per-host`: every download to one host shares one budget of connections.
@Suite(.timeLimit(.minutes(2))) struct HostBudgetTests {
    @Test func fourDownloadsOfFourConnectionsNeverOpenMoreThanTheBudget() async throws {
        try await withHarness(maxConcurrent: 4, minimumSegmentSize: 256 << 10, maxConnectionsPerHost: 3) { harness in
            let payload = Payload(seed: 31, length: 3_000_000)
            harness.server.setRoute("/file", Route(payload: payload, throttle: 3_000_000))
            // One path (the query differs): the server counts the responses in flight over all four.
            var ids: [DownloadID] = []
            for number in 1...4 {
                let request = try DownloadRequest(
                    url: RemoteURL(harness.server.url("/file?copy=\(number)")),
                    destination: .file(harness.directory + "/copy\(number)"), connections: 4)
                ids.append(try await harness.manager.add(request).id)
            }
            for id in ids {
                let outcome = try await harness.manager.outcome(of: id)
                #expect(outcome.status == .completed, "\(outcome.record?.error.map { "\($0)" } ?? "")")
            }
            for number in 1...4 {
                #expect(payload.mismatch(inFileAt: harness.directory + "/copy\(number)") == nil)
            }
            #expect(harness.server.peakConcurrentResponses(to: "/file") <= 3)
            // Every download got connections (none failed for getting fewer than it asked for).
            #expect(harness.server.responses(to: "/file").count >= 4)
        }
    }
}
