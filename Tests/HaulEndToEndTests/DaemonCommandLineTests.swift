import Foundation
import HaulAPI
import HaulCore
import HaulServer
import HaulStore
import HaulTesting
import NIOHTTP1
import Testing

/// The CLI against a running daemon: what a user types, with its output and exit codes.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DaemonCommandLineTests {
    let small = Payload(seed: 21, length: 200_000)
    let big = Payload(seed: 22, length: 4_000_000)

    @Test func addListPauseResumeRemove() async throws {
        let world = try await World.make()
        world.server.setRoute("/small.bin", Route(payload: small))
        // Every response stalls after 1 MB: the big one is still running whenever the test looks.
        world.server.setRoute("/big.bin", Route(payload: big, throttle: 300_000, then: .stallAfter(1_000_000)))
        let daemon = try await DaemonProcess.start(world, ["-j", "2"])
        defer { daemon.process.signal(SIGKILL) }

        let list = world.directory + "/urls.txt"
        try "# two URLs\n\(world.server.url("/small.bin"))\n\n\(world.server.url("/big.bin"))\n".write(
            toFile: list, atomically: true, encoding: .utf8)
        let added = try await HaulProcess.run(["add", "-i", list], in: world)
        #expect(added.status == 0, "\(added.stderr)")
        let ids = added.stdout.split(separator: "\n").map(String.init)
        #expect(ids.count == 2)
        let (smallID, bigID) = (ids[0], ids[1])
        try await daemon.wait(for: smallID, status: .completed)
        try await daemon.wait(for: bigID, status: .running, where: { $0.completedLength > 0 })

        let json = try await HaulProcess.run(["ls", "--json"], in: world)
        #expect(json.status == 0, "\(json.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 2)
        for element in array {
            for key in [
                "id", "url", "status", "completedLength", "totalLength", "path", "error", "connections",
                "maxConnections", "maxBytesPerSecond",
            ] {
                #expect(element.keys.contains(key), "\(key) missing in \(element)")
            }
        }
        #expect(array.first { $0["id"] as? String == smallID }?["path"] as? String == world.directory + "/small.bin")

        let table = try await HaulProcess.run(["ls"], in: world)
        #expect(
            table.stdout.contains(smallID) && table.stdout.contains("completed") && table.stdout.contains("small.bin"))

        let paused = try await HaulProcess.run(["pause", bigID], in: world)
        #expect(paused.status == 0 && paused.stdout == "paused 1\n", "\(paused.stderr)")
        try await daemon.wait(for: bigID, status: .paused)
        let onlyPaused = try await HaulProcess.run(["ls", "--status", "paused"], in: world)
        #expect(onlyPaused.stdout.contains(bigID) && !onlyPaused.stdout.contains(smallID))
        let resumed = try await HaulProcess.run(["resume", "--all"], in: world)
        #expect(resumed.status == 0 && resumed.stdout == "resumed 1\n")
        try await daemon.wait(for: bigID, status: .running)

        // Exit codes: a finished one cannot be paused (9), an unknown id (8), bad usage (2).
        let conflict = try await HaulProcess.run(["pause", smallID], in: world)
        #expect(
            conflict.status == 9 && conflict.stderr.hasPrefix("haul: ")
                && conflict.stderr.split(separator: "\n").count == 1)
        let unknown = try await HaulProcess.run(["rm", "0123456789abcdef"], in: world)
        #expect(unknown.status == 8, "\(unknown.stderr)")
        #expect(try await HaulProcess.run(["pause"], in: world).status == 2)
        #expect(try await HaulProcess.run(["pause", "--all", bigID], in: world).status == 2)
        // A bad URL anywhere in the arguments adds none of them, and the message names it.
        let badAdd = try await HaulProcess.run(["add", world.server.url("/never"), "ftp://example.com/x"], in: world)
        #expect(
            badAdd.status == 2
                && badAdd.stderr == "haul: unsupported scheme 'ftp' in ftp://example.com/x (only http and https)\n",
            "\(badAdd.stderr)")
        #expect(try await daemon.list().count == 2)
        #expect(try await HaulProcess.run(["ls", "--status", "sleeping"], in: world).status == 2)

        let removed = try await HaulProcess.run(["rm", bigID, smallID, "--delete-file"], in: world)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(world.files().filter { !$0.hasSuffix(".txt") }.isEmpty, "\(world.files())")
        #expect(try await daemon.list().isEmpty)

        // A second daemon on the same HAUL_HOME is refused, and says which one runs.
        let second = try await HaulProcess.run(["serve", "--port", "0"], in: world)
        #expect(second.status == 6 && second.stderr.contains("already running"), "\(second.stderr)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// `serve --limit-schedule` and the hooks: a malformed one is one line and exit 2 before
    /// anything listens; a good schedule shows in the options and sets the limit at start.
    @Test func scheduleAndHookOptionsAreCheckedAtStart() async throws {
        let world = try await World.make()
        let plain = world.directory + "/notes.txt"
        try "not a program".write(toFile: plain, atomically: true, encoding: .utf8)
        let bad: [[String]] = [
            ["--limit-schedule", "Mon-Fri 9-18 1M"], ["--limit-schedule", "Mon-Fri 09:00-18:00"],
            ["--limit-schedule", ";"],
            ["--on-complete", world.directory + "/no-such-program"], ["--on-error", plain],
            ["--webhook", "http://127.0.0.1:9/hook"], ["--webhook", "ftp://x/y", "--webhook-secret", "k"],
            ["--webhook-secret", "k"],
            ["--webhook", "http://127.0.0.1:9/hook", "--webhook-secret-file", world.directory + "/none"],
        ]
        for arguments in bad {
            let result = try await HaulProcess.run(["serve", "--port", "0"] + arguments, in: world)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
        // Every day, all day: whatever the time, the schedule's limit holds from the start.
        let daemon = try await DaemonProcess.start(
            world,
            [
                "--limit-rate", "2M", "--limit-schedule", "* 00:00-24:00 700K",
                "--on-complete", "true",
            ])
        defer { daemon.process.signal(SIGKILL) }
        let options = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self)
        #expect(options.limitSchedule == "* 00:00-24:00 700K")
        var limit = options.maxBytesPerSecond
        for _ in 0..<600 where limit != 700 << 10 { // a hang guard: the schedule is applied as the daemon starts
            try await Task.sleep(for: .milliseconds(100))
            limit = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self).maxBytesPerSecond
        }
        #expect(limit == 700 << 10, "the schedule's limit, not --limit-rate's")
        try await world.close()
    }

    /// `serve -x/--limit-rate` set the daemon's defaults; `add -x/--limit-rate` a download's own;
    /// `ls` shows the live connections, `ls --json` carries them.
    @Test func connectionsAndRateLimits() async throws {
        let world = try await World.make()
        world.server.setRoute("/small.bin", Route(payload: small))
        world.server.setRoute("/split.bin", Route(payload: Payload(seed: 23, length: 4_500_000), throttle: 250_000))
        for bad in [
            ["serve", "-x", "0"], ["serve", "-x", "65"], ["serve", "--limit-rate", "fast"],
            ["serve", "--limit-rate", "0"],
        ] {
            let result = try await HaulProcess.run(bad + ["--port", "0"], in: world)
            #expect(result.status == 2, "\(bad): \(result.stderr)")
        }
        let daemon = try await DaemonProcess.start(world, ["-x", "2", "--limit-rate", "2M"])
        defer { daemon.process.signal(SIGKILL) }
        let options = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self)
        #expect(options.connections == 2 && options.maxBytesPerSecond == 2 << 20)

        for bad in [["-x", "0"], ["-x", "65"], ["--limit-rate", "0"], ["--limit-rate", "1X"]] {
            let result = try await HaulProcess.run(["add"] + bad + [world.server.url("/small.bin")], in: world)
            #expect(result.status == 2, "\(bad): \(result.stderr)")
        }
        #expect(try await daemon.list().isEmpty)

        let split = try await HaulProcess.run(
            ["add", "-x", "3", "--limit-rate", "1M", world.server.url("/split.bin")], in: world)
        #expect(split.status == 0, "\(split.stderr)")
        let splitID = split.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let plain = try await HaulProcess.run(["add", world.server.url("/small.bin")], in: world)
        let plainID = plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try await daemon.wait(for: plainID, status: .completed)
        try await daemon.wait(for: splitID, status: .running, where: { $0.connections > 0 })

        let json = try await HaulProcess.run(["ls", "--json"], in: world)
        #expect(json.status == 0, "\(json.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let listed = try #require(array.first { $0["id"] as? String == splitID })
        #expect(listed["maxConnections"] as? Int == 3 && listed["maxBytesPerSecond"] as? Int == 1 << 20, "\(listed)")
        #expect(listed["connections"] is Int, "\(listed)")
        let other = try #require(array.first { $0["id"] as? String == plainID })
        #expect(
            other["maxConnections"] as? Int == 2 && other["connections"] as? Int == 0
                && other["maxBytesPerSecond"] is NSNull, "\(other)")

        // The table: "x N" live connections on the running download's line, none on the finished one's.
        let table = try await HaulProcess.run(["ls"], in: world)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        let splitLine = try #require(lines.first { $0.hasPrefix(splitID) })
        if splitLine.contains("running") {
            #expect(splitLine.range(of: #"  x[0-9]+  "#, options: .regularExpression) != nil, "\(splitLine)")
        }
        let plainLine = try #require(lines.first { $0.hasPrefix(plainID) })
        #expect(plainLine.range(of: #"  x[0-9]+  "#, options: .regularExpression) == nil, "\(plainLine)")

        let removed = try await HaulProcess.run(["rm", splitID], in: world)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func withoutADaemonEveryCommandSaysSo() async throws {
        let world = try await World.make()
        for arguments in [
            ["ls"], ["add", "http://example.com/x"], ["pause", "--all"], ["resume", "--all"], ["rm", "abc"], ["watch"],
        ] {
            let result = try await HaulProcess.run(arguments, in: world)
            #expect(result.status == 7, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.contains("no haul daemon is running") && result.stderr.split(separator: "\n").count == 1,
                "\(arguments): \(result.stderr)")
        }
        // A stale serve.json after kill -9 says the same.
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        await daemon.kill9()
        let stale = try await HaulProcess.run(["ls"], in: world)
        #expect(stale.status == 7 && stale.stderr.contains("is gone"), "\(stale.stderr)")
        try await world.close()
    }

    /// Downloads go under -d and --allow-dir only; `haul add -d` elsewhere is refused with exit 10
    /// and nothing is written there.
    @Test func downloadsStayInTheAllowedDirectories() async throws {
        let world = try await World.make()
        world.server.setRoute("/file.bin", Route(payload: Payload(seed: 5, length: 10_000)))
        let extra = world.home + "/../extra"
        let outside = world.home + "/../outside"
        let daemon = try await DaemonProcess.start(world, ["--allow-dir", extra])
        defer { daemon.process.signal(SIGKILL) }
        let refused = try await HaulProcess.run(["add", "-d", outside, world.server.url("/file.bin")], in: world)
        #expect(refused.status == 10 && refused.stderr.contains("--allow-dir"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: outside))
        let allowed = try await HaulProcess.run(["add", "-d", extra, world.server.url("/file.bin")], in: world)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let id = try #require(try await daemon.list().first?.id)
        let done = try await daemon.wait(for: id, status: .completed)
        #expect(done.path == URL(fileURLWithPath: extra).standardized.path + "/file.bin")
        #expect(Payload(seed: 5, length: 10_000).mismatch(inFileAt: try #require(done.path)) == nil)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// `aria2.shutdown` stops the daemon as SIGTERM does: the answer first, then a clean exit, and
    /// a paused download is still paused on the next start.
    @Test func aria2ShutdownStopsTheDaemonCleanly() async throws {
        let world = try await World.make()
        world.server.setRoute("/slow.bin", Route(payload: Payload(seed: 7, length: 8 << 20), throttle: 256 << 10))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let added = try await daemon.add(world.server.url("/slow.bin"))
        _ = try await daemon.call(.POST, "/api/v1/downloads/\(added.id)/pause")
        let call = #"{"jsonrpc":"2.0","id":"s","method":"aria2.shutdown","params":["token:\#(daemon.serve.secret)"]}"#
        let answer = try await daemon.call(.POST, "/jsonrpc", body: call, token: .some(nil))
        #expect(answer.status == 200 && answer.text == #"{"id":"s","jsonrpc":"2.0","result":"OK"}"#, "\(answer.text)")
        #expect(await daemon.process.wait() == 0, "\(daemon.process.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: ServeFile.path(home: world.home)), "a clean exit deletes serve.json"
        )
        let again = try await DaemonProcess.start(world)
        defer { again.process.signal(SIGKILL) }
        #expect(try await again.download(added.id).status == .paused)
        #expect(await again.terminate() == 0)
        try await world.close()
    }

    /// `GET /metrics`, scraped and parsed as Prometheus text after a download and a retry.
    @Test func metricsCountWhatHappened() async throws {
        let world = try await World.make()
        let payload = Payload(seed: 6, length: 3 << 20)
        world.server.setRoute("/file.bin", Route(payload: payload, script: [.status(503)]))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let unauthorized = try await daemon.call(.GET, "/metrics", token: .some(nil))
        #expect(unauthorized.status == 401)
        let added = try await daemon.add(world.server.url("/file.bin"))
        _ = try await daemon.wait(for: added.id, status: .completed)
        var samples: [String: Double] = [:]
        for _ in 0..<200 {
            let scrape = try await daemon.call(.GET, "/metrics")
            #expect(scrape.status == 200)
            samples = Self.parsePrometheus(scrape.text)
            // The metrics hear events on their own task: the API may say completed first.
            if samples["haul_downloaded_bytes_total"] == Double(payload.length),
                samples[#"haul_downloads_finished_total{result="completed"}"#] == 1
            {
                break
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(samples[#"haul_downloads{status="completed"}"#] == 1)
        #expect(samples[#"haul_downloads{status="running"}"#] == 0)
        #expect(samples[#"haul_downloads_finished_total{result="completed"}"#] == 1)
        #expect(samples["haul_downloaded_bytes_total"] == Double(payload.length))
        #expect(samples["haul_retries_total"] == 1, "one 503 then success")
        #expect(samples[#"haul_restarts_total{cause="ranges-ignored"}"#] == 0)
        #expect((samples[#"haul_checkpoint_seconds_count{step="fsync"}"#] ?? 0) >= 1)
        #expect((samples[#"haul_checkpoint_seconds_count{step="store"}"#] ?? 0) >= 1)
        #expect(samples["haul_download_speed_bytes_per_second"] == 0)
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// `name{labels} value` lines; comments skipped. A malformed line fails the test.
    static func parsePrometheus(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Double(parts[1]) else {
                Issue.record("not a Prometheus sample: \(line)")
                continue
            }
            samples[String(parts[0])] = value
        }
        return samples
    }

    @Test func serveRefusesUnsafeOrBadOptions() async throws {
        let world = try await World.make()
        let open = try await HaulProcess.run(["serve", "--host", "0.0.0.0", "--port", "0"], in: world)
        #expect(open.status == 2 && open.stderr.contains("without --secret"), "\(open.stderr)")
        let port = try await HaulProcess.run(["serve", "--port", "70000"], in: world)
        #expect(port.status == 2, "\(port.stderr)")
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }
        let url = try #require(URLComponents(string: daemon.serve.url))
        // The secret is readable by its owner only.
        let attributes = try FileManager.default.attributesOfItem(atPath: ServeFile.path(home: world.home))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(daemon.serve.secret.count >= 32)
        // The token never reaches stdout (a journal under systemd); `haul page` gives it to its owner.
        // The banner may still be on its way through the pipe when the serve file appears.
        for _ in 0..<400 where !daemon.process.stdout.contains("/jsonrpc") {
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(
            daemon.process.stdout.contains("/jsonrpc") && !daemon.process.stdout.contains(daemon.serve.secret),
            "\(daemon.process.stdout)")
        #expect(!daemon.process.stderr.contains(daemon.serve.secret))
        let page = try await HaulProcess.run(["page"], in: world)
        #expect(
            page.status == 0 && page.stdout == daemon.serve.url + "/#token=" + daemon.serve.secret + "\n",
            "\(page.stdout)")
        #expect(await daemon.terminate() == 0)
        // A host name that merely starts with 127. is not loopback.
        let named = try await HaulProcess.run(["serve", "--host", "127.example.invalid", "--port", "0"], in: world)
        #expect(named.status == 2 && named.stderr.contains("without --secret"), "\(named.stderr)")
        // The port is free again; a busy one is a clear error.
        let blocker = try await DaemonProcess.start(world, ["--port", "\(url.port!)"])
        defer { blocker.process.signal(SIGKILL) }
        let otherHome = try await World.make()
        let busy = try await HaulProcess.run(["serve", "--port", "\(url.port!)"], in: otherHome)
        #expect(busy.status == 6 && busy.stderr.contains("cannot listen"), "\(busy.stderr)")
        #expect(await blocker.terminate() == 0)
        try await otherHome.close()
        try await world.close()
    }
}
