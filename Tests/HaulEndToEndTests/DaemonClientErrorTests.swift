import Foundation
import HaulTesting
import Testing

/// The real `haul` binary against a "daemon" that breaks its answers: each failure gets the
/// exit code of what happened, never a usage error.
@Suite(.timeLimit(.minutes(1))) struct DaemonClientErrorTests {
    /// An event stream whose framing breaks ends `haul watch` with no-daemon (7) and one line
    /// that says so; it used to surface AsyncHTTPClient's own error as a usage error (2).
    @Test func aBrokenEventStreamIsNoDaemon() async throws {
        let world = try await World.make()
        world.server.setRoute(
            "/api/v1/events",
            Route(
                payload: Payload(seed: 1, length: 1000),
                then: .brokenChunks(.badSize("zz", after: 10))))
        world.server.setRoute(
            "/api/v1/downloads",
            Route(
                payload: Payload(seed: 2, length: 1),
                then: .document("[]\n", headers: [("Content-Type", "application/json")])))
        let server = world.server.url("")
        let result = try await HaulProcess.run(["watch", "--server", server, "--secret", "s"], in: world)
        #expect(result.status == 7, "\(result.stderr)")
        #expect(result.stderr == "haul: the haul daemon at \(server) broke off its event stream\n")
        #expect(world.server.requests(to: "/api/v1/events").count == 1)
        try await world.close()
    }
}
