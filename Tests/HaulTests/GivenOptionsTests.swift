import HaulCore
import HaulTesting
import Testing

@testable import Haul

/// What a request carries that the store may not keep (credentials, `-N`, `--remote-time`) is
/// held by the manager for the download's runs, and dropped with the download.
@Suite(.timeLimit(.minutes(1))) struct GivenOptionsTests {
    let payload = Payload(seed: 32, length: 200_000)

    /// With `-j 1`: a download that holds the only slot (running, stalled), and one behind it
    /// added with credentials and `-N`, queued.
    private func slotHeld(_ harness: Harness) async throws -> (running: DownloadRecord, queued: DownloadRecord) {
        harness.server.setRoute("/slow", Route(payload: payload, throttle: 50_000, then: .stallAfter(100_000)))
        harness.server.setRoute("/file", Route(payload: payload))
        let events = harness.manager.events()
        let running = try await harness.manager.add(harness.request("/slow"))
        await harness.waitForProgress(of: running.id, beyond: 0, in: events)
        var request = try harness.request("/file")
        request.credentials = Credentials(user: "user", password: "secret")
        request.timestamping = true
        return (running, try await harness.manager.add(request))
    }

    @Test func aRemovedDownloadLeavesNothingGivenBehind() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (running, queued) = try await slotHeld(harness)
            #expect(await harness.manager.queue.given(queued.id)?.credentials != nil)
            #expect(await harness.manager.queue.given(queued.id)?.timestamps?.timestamping == true)

            try await harness.manager.remove(queued.id, deleteFile: true)
            #expect(await harness.manager.queue.given(queued.id) == nil)
            try await harness.manager.remove(running.id, deleteFile: true)
            #expect(await harness.manager.queue.given(running.id) == nil)
        }
    }

    @Test func aPausedDownloadKeepsWhatWasGivenAndACompletedOneDropsIt() async throws {
        try await withHarness(maxConcurrent: 1) { harness in
            let (running, queued) = try await slotHeld(harness)
            try await harness.manager.pause(queued.id)
            #expect(await harness.manager.queue.given(queued.id)?.credentials != nil)

            // The slot freed, the paused one resumed: it runs with what was given, then drops it.
            try await harness.manager.remove(running.id, deleteFile: true)
            try await harness.manager.resume(queued.id)
            let outcome = try await harness.manager.outcome(of: queued.id)
            #expect(outcome.status == .completed)
            #expect(await harness.manager.queue.given(queued.id) == nil)
        }
    }
}
