import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import Testing

/// `haul get` without `-x` finds the count: it grows while the server paces each connection, and
/// gives back a step that brought nothing. Counted on the server, never timed.
@Suite(.timeLimit(.minutes(2))) struct ConnectionGrowthEndToEndTests {
    /// Every response paced to 256 KiB/s: each step pays, so the download reaches the ceiling of
    /// 16 connections (haul says so); `-x 4` holds 4. The server's peak is at most one above the
    /// count (a request cut near the end by a steal may still be sending on the server's side while
    /// its replacement starts). Below, the grown count must have run more than the step before the
    /// ceiling (10) at once: on an idle machine the server sees all 16, but on two cores running
    /// the whole suite the last step's connections may open while the earliest segments end, and a
    /// step that did not pay there is taken back (CI once saw 15 at once, then "settled" at 12).
    @Test(arguments: [([String](), 11), (["-x", "4"], 4)])
    func aPacedServerGetsMoreConnectionsUnlessACountIsNamed(flags: [String], least: Int) async throws {
        let peak = flags.isEmpty ? ConnectionGrowth.ceiling : 4
        let world = try await World.make()
        let payload = Payload(seed: 3101, length: 12 << 20)
        world.server.setRoute("/paced.bin", Route(payload: payload, throttle: 256 << 10))
        let result = try await HaulProcess.run(
            ["get", world.server.url("/paced.bin"), "-k", "256K", "-v"] + flags, in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/paced.bin") == nil)
        let seen = world.server.peakConcurrentResponses(to: "/paced.bin")
        #expect(seen >= least && seen <= peak + 1, "seen \(seen)\n\(result.stderr)")
        #expect(result.stderr.contains("more connections") == flags.isEmpty, "\(result.stderr)")
        #expect(result.stderr.contains("connections=\(ConnectionGrowth.ceiling)") == flags.isEmpty, "\(result.stderr)")
        try await world.close()
    }

    /// The fifth connection and those after it get 32 KiB/s, under 2 % of the four first: the
    /// probe (one more) brings nothing, and the count settles instead of climbing to the ceiling
    /// as it does against a server that paces every connection (above). The file is byte-exact:
    /// the probe's slow part is taken over by the others. (On an idle machine the server sees 5
    /// at once; on two cores running the whole suite a noisy window may keep a step or two
    /// before one is taken back, so the bound is the ceiling, not 5.)
    @Test func aStepThatDoesNotPayIsTakenBack() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 3102, length: 12 << 20)
        let fast = 512 << 10
        world.server.setRoute(
            "/capped.bin",
            Route(
                payload: payload, connectionThrottles: [fast, fast, fast, fast] + Array(repeating: 32 << 10, count: 60)
            ))
        let result = try await HaulProcess.run(["get", world.server.url("/capped.bin"), "-k", "256K", "-v"], in: world)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(payload.mismatch(inFileAt: world.directory + "/capped.bin") == nil)
        let peak = world.server.peakConcurrentResponses(to: "/capped.bin")
        #expect(peak >= 5 && peak < ConnectionGrowth.ceiling, "probed, then held back: \(peak)\n\(result.stderr)")
        #expect(result.stderr.contains("more connections"), "\(result.stderr)")
        #expect(result.stderr.contains("connections settled"), "\(result.stderr)")
        try await world.close()
    }

    /// `haul serve`: an add that names no count starts at the daemon's `-x` (1) and grows the
    /// same way, but only while it is its host's only download (no `--max-connections-per-host`):
    /// it waits at 1 while the fixed one runs beside it, then grows to the ceiling alone. One
    /// that names a count keeps it.
    @Test func theDaemonGrowsAnAddThatNamesNoCount() async throws {
        let world = try await World.make()
        // Room for 16 connections at the daemon's 1 MiB minimum segment.
        let payload = Payload(seed: 3103, length: 32 << 20)
        let small = Payload(seed: 3104, length: 4 << 20)
        world.server.setRoute("/grown.bin", Route(payload: payload, throttle: 256 << 10))
        world.server.setRoute("/fixed.bin", Route(payload: small, throttle: 1 << 20))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let grown = try await daemon.add(world.server.url("/grown.bin"), connections: nil)
        let fixed = try await daemon.add(world.server.url("/fixed.bin"), connections: 2)
        #expect(grown.maxConnections == 1 && fixed.maxConnections == 2)
        try await daemon.wait(for: grown.id, status: .completed)
        try await daemon.wait(for: fixed.id, status: .completed)
        #expect(payload.mismatch(inFileAt: world.directory + "/grown.bin") == nil)
        #expect(small.mismatch(inFileAt: world.directory + "/fixed.bin") == nil)
        // The daemon logs each step at info; the server's peak may be one above, and under load
        // the last step may not all run at once (see above).
        #expect(
            daemon.process.stderr.contains("connections=\(ConnectionGrowth.ceiling)"),
            "\(daemon.process.stderr.suffix(3000))")
        let grownPeak = world.server.peakConcurrentResponses(to: "/grown.bin")
        #expect((11...ConnectionGrowth.ceiling + 1).contains(grownPeak), "seen \(grownPeak)")
        #expect((2...3).contains(world.server.peakConcurrentResponses(to: "/fixed.bin")))
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }
}
