import Foundation
import HaulAPI
import HaulCore
import HaulTesting
import NIOHTTP1
import Testing

/// SIGHUP (`systemctl reload haul`): `haul serve` reads its configuration file again, applies the
/// live settings whose lines changed (jobs, connections, limit-rate, limit-schedule), names the
/// other changed options as needing a restart, and a file that does not read changes nothing.
@Suite(.timeLimit(.minutes(2))) struct ConfigReloadTests {
    /// The daemon's options, as the API answers them.
    static func options(of daemon: DaemonProcess) async throws -> [String: Any] {
        try await daemon.call(.GET, "/api/v1/options").json as? [String: Any] ?? [:]
    }

    /// Waits until the daemon's log says `text`, `times` times or more (bounded). The daemon logs
    /// "configuration reloaded" once it has applied a reload's every change.
    static func log(of daemon: DaemonProcess, contains text: String, times: Int = 1) async throws {
        for _ in 0..<2400 {
            if daemon.process.stderr.components(separatedBy: text).count > times { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestFailure("the log never said \(text); it says:\n\(daemon.process.stderr)")
    }

    @Test func sighupAppliesTheLiveSettingsNamesTheOthersAndABadFileChangesNothing() async throws {
        let world = try await World.make()
        // No file at the start: a reload reads the one written since. -x on the command line wins.
        let daemon = try await DaemonProcess.start(world, ["-x", "2"])
        let before = try await Self.options(of: daemon)
        #expect(before["maxConcurrentDownloads"] as? Int == 3)
        #expect(before["maxBytesPerSecond"] == nil || before["maxBytesPerSecond"] is NSNull)

        let path = try ConfigFileTests.writeConfig(
            """
            [serve]
            jobs=4
            x=3
            limit-rate=1M
            limit-schedule=Mon-Sun 00:00-24:00 2M
            idle-timeout=30
            """, in: world)
        daemon.process.signal(SIGHUP)
        try await Self.log(of: daemon, contains: "configuration reloaded")
        let reloaded = try await Self.options(of: daemon)
        #expect(reloaded["maxConcurrentDownloads"] as? Int == 4)
        #expect(reloaded["connections"] as? Int == 2, "the command line's -x 2 still wins over the file's x=3")
        #expect(reloaded["maxBytesPerSecond"] as? Int == 2 << 20, "the schedule's rule holds all week")
        #expect(
            reloaded["limitSchedule"] as? String == (try SpeedSchedule(parsing: "Mon-Sun 00:00-24:00 2M")).description)
        try await Self.log(of: daemon, contains: "not changed until haul serve restarts: idle-timeout")

        // A bad line: its place named, nothing changed, the daemon still serves.
        try "[serve]\njobs=9\nbogus=1\n".write(toFile: path, atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        try await Self.log(of: daemon, contains: "\(path):3: unknown option 'bogus' for haul serve")
        let unchanged = try await Self.options(of: daemon)
        #expect(unchanged["maxConcurrentDownloads"] as? Int == 4)

        // The rate and schedule lines gone: back to no limit, no schedule.
        try "[serve]\njobs=5\nidle-timeout=30\n".write(toFile: path, atomically: true, encoding: .utf8)
        daemon.process.signal(SIGHUP)
        try await Self.log(of: daemon, contains: "configuration reloaded", times: 2)
        let cleared = try await Self.options(of: daemon)
        #expect(cleared["maxConcurrentDownloads"] as? Int == 5)
        #expect(cleared["maxBytesPerSecond"] == nil || cleared["maxBytesPerSecond"] is NSNull)
        #expect(cleared["limitSchedule"] == nil || cleared["limitSchedule"] is NSNull)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// A reload compares with the file the start read: lines that did not change since change
    /// nothing, so a setting changed through the API since then holds.
    @Test func aReloadOfAnUnchangedFileKeepsWhatTheAPISet() async throws {
        let world = try await World.make()
        _ = try ConfigFileTests.writeConfig("[serve]\njobs=2\n", in: world)
        let daemon = try await DaemonProcess.start(world)
        #expect(try await Self.options(of: daemon)["maxConcurrentDownloads"] as? Int == 2)
        _ = try await daemon.call(.PATCH, "/api/v1/options", body: #"{"maxConcurrentDownloads": 6}"#)
        daemon.process.signal(SIGHUP)
        try await Self.log(of: daemon, contains: "changed=none")
        #expect(try await Self.options(of: daemon)["maxConcurrentDownloads"] as? Int == 6)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func sighupWithoutAFileToReadLeavesTheDaemonRunning() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world, ["--no-config"])
        daemon.process.signal(SIGHUP)
        try await Self.log(of: daemon, contains: "SIGHUP: no configuration file to read again")
        let options = try await Self.options(of: daemon)
        #expect(options["maxConcurrentDownloads"] as? Int == 3)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }
}
