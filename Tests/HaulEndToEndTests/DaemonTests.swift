import AsyncHTTPClient
import Foundation
import HaulAPI
import HaulCore
import HaulServer
import HaulStore
import HaulTesting
import NIOCore
import NIOHTTP1
import Testing

/// `haul serve` as a user runs it: the real binary, its HTTP API, its store, `kill -9`.
@Suite(.serialized, .timeLimit(.minutes(5))) struct DaemonTests {
    let small = Payload(seed: 11, length: 300_000)
    let big = Payload(seed: 12, length: 4_000_000)

    @Test func apiAddsListsAndDoesNotDownloadTwice() async throws {
        let world = try await World.make()
        world.server.setRoute("/small.bin", Route(payload: small))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }

        let added = try await daemon.add(world.server.url("/small.bin"))
        #expect(added.status == .queued || added.status == .running)
        let done = try await daemon.wait(for: added.id, status: .completed)
        #expect(done.completedLength == small.length && done.totalLength == small.length)
        #expect(done.path == world.directory + "/small.bin")
        #expect(world.sha256(of: world.directory + "/small.bin") == small.sha256)

        // The same URL to the same place: the same download, no second transfer.
        let again = try await daemon.add(world.server.url("/small.bin"))
        #expect(again.id == added.id)
        let batch = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"[{"url": "\#(world.server.url("/small.bin"))"}, {"url": "\#(world.server.url("/small.bin"))"}]"#)
        #expect(batch.status == 201)
        #expect(try batch.decode([DownloadView].self).map(\.id) == [added.id, added.id])
        #expect(world.server.requests(to: "/small.bin").count == 1)

        let listed = try await daemon.list()
        #expect(listed.map(\.id) == [added.id])
        let summary = try await daemon.call(.GET, "/api/v1/summary").decode(SummaryView.self)
        #expect(summary.counts["completed"] == 1 && summary.counts["queued"] == 0)

        let options = try await daemon.call(.PUT, "/api/v1/options", body: #"{"maxConcurrentDownloads": 5}"#)
        #expect(try options.decode(OptionsView.self).maxConcurrentDownloads == 5)

        // Removing keeps the finished file unless asked; deleteFile deletes it.
        let removed = try await daemon.call(.DELETE, "/api/v1/downloads/\(added.id)?deleteFile=true")
        #expect(removed.status == 200)
        #expect(try removed.decode(DownloadView.self).status == .removed)
        #expect(!FileManager.default.fileExists(atPath: world.directory + "/small.bin"))
        #expect(try await daemon.list().isEmpty)
        #expect(try await daemon.list("?status=removed").map(\.id) == [added.id])

        #expect(await daemon.terminate() == 0)
        #expect(
            !FileManager.default.fileExists(atPath: ServeFile.path(home: world.home)), "serve.json is removed on exit")
        try await world.close()
    }

    @Test func badRequestsGetTheRightStatusAndLoseNothing() async throws {
        let world = try await World.make()
        // 200 s of body: it must still be running at the end, however loaded the machine (at
        // 200,000 B/s a loaded run of this test outlasted it).
        world.server.setRoute("/big.bin", Route(payload: big, throttle: 20_000))
        world.server.setRoute("/small.bin", Route(payload: small))
        let daemon = try await DaemonProcess.start(world, ["-j", "1"])
        defer { daemon.process.signal(SIGKILL) }
        let running = try await daemon.add(world.server.url("/big.bin"))
        let queued = try await daemon.add(world.server.url("/small.bin"))

        let huge = "[" + String(repeating: #"{"url": "http://example.com/x"},"#, count: 40_000) + "]"
        let cases: [BadCall] = [
            BadCall(.GET, "/api/v1/downloads", nil, token: .missing, 401, "unauthorized"),
            BadCall(.GET, "/api/v1/downloads", nil, token: .wrong, 401, "unauthorized"),
            BadCall(.POST, "/api/v1/downloads", "{\"url\": ", 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": 42}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "priority": "high"}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"nothing": true}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", "[]", 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", "\"text\"", 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "ftp://example.com/x"}"#, 400, "unsupported-scheme"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "file:///etc/passwd"}"#, 400, "unsupported-scheme"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "not a url"}"#, 400, "bad-url"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "directory": "/etc"}"#, 403, "forbidden"),
            BadCall(
                .POST, "/api/v1/downloads", #"{"url": "http://x/y", "directory": "\#(world.directory)/../home"}"#, 403,
                "forbidden"),
            BadCall(
                .POST, "/api/v1/downloads", #"[{"url": "http://x/ok"}, {"url": "http://x/y", "directory": "/tmp"}]"#,
                403, "forbidden"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "directory": "relative"}"#, 400, "usage"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "fileName": "../escape"}"#, 400, "usage"),
            BadCall(.POST, "/api/v1/downloads", huge, 413, "too-large"),
            BadCall(.GET, "/api/v1/downloads/0123456789abcdef", nil, 404, "not-found"),
            BadCall(.GET, "/api/v1/downloads?status=sleeping", nil, 400, "bad-request"),
            BadCall(.DELETE, "/api/v1/downloads/nope", nil, 404, "not-found"),
            BadCall(.GET, "/api/v1/no-such-thing", nil, 404, "not-found"),
            BadCall(.POST, "/api/v1/pause", #"{"ids": ["0123456789abcdef"]}"#, 404, "not-found"),
            BadCall(.POST, "/api/v1/pause", "{}", 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads/\(running.id)/move", #"{"to": "up"}"#, 409, "conflict"),
            BadCall(.POST, "/api/v1/downloads/\(queued.id)/move", #"{"to": "sideways"}"#, 400, "bad-request"),
            BadCall(.PUT, "/api/v1/options", #"{"maxConcurrentDownloads": 0}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "connections": 0}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "connections": 65}"#, 400, "bad-request"),
            BadCall(
                .POST, "/api/v1/downloads", #"[{"url": "http://x/y"}, {"url": "http://x/z", "connections": -1}]"#, 400,
                "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "connections": "4"}"#, 400, "bad-request"),
            BadCall(.POST, "/api/v1/downloads", #"{"url": "http://x/y", "maxBytesPerSecond": 0}"#, 400, "bad-request"),
            BadCall(
                .POST, "/api/v1/downloads", #"{"url": "http://x/y", "maxBytesPerSecond": 1.5}"#, 400, "bad-request"),
            BadCall(.PUT, "/api/v1/options", #"{"connections": 0}"#, 400, "bad-request"),
            BadCall(.PUT, "/api/v1/options", #"{"connections": 65}"#, 400, "bad-request"),
            BadCall(.PUT, "/api/v1/options", #"{"maxBytesPerSecond": -5}"#, 400, "bad-request"),
            BadCall(.PATCH, "/api/v1/downloads/\(queued.id)", "{}", 400, "bad-request"),
            BadCall(.PATCH, "/api/v1/downloads/\(queued.id)", #"{"maxBytesPerSecond": 0}"#, 400, "bad-request"),
            BadCall(.PATCH, "/api/v1/downloads/0123456789abcdef", #"{"maxBytesPerSecond": 1000}"#, 404, "not-found"),
        ]
        for item in cases {
            let token: String?? =
                switch item.token {
                case .good: .none
                case .missing: .some(nil)
                case .wrong: .some("wrong-token")
                }
            let answer = try await daemon.call(item.method, item.path, body: item.body, token: token)
            let label = "\(item.method) \(item.path) \(String((item.body ?? "").prefix(60)))"
            #expect(answer.status == item.status, "\(label): \(answer.text)")
            #expect(answer.errorCode == item.code, "\(label): \(answer.text)")
            let message = ((answer.json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String
            #expect(message?.isEmpty == false && message?.contains("\n") == false, "one-line message: \(answer.text)")
        }
        for connections in [0, 65] {
            let answer = try await daemon.call(
                .POST, "/api/v1/downloads", body: #"{"url": "http://x/y", "connections": \#(connections)}"#)
            #expect(answer.text.contains("connections must be between 1 and 64, not \(connections)"), "\(answer.text)")
        }
        // One place, one download, however the directory is spelled.
        let spellings = [world.directory, world.directory + "/", world.directory + "/.", world.directory + "//x/.."]
        var spelled: Set<String> = []
        for directory in spellings {
            let answer = try await daemon.call(
                .POST, "/api/v1/downloads",
                body: #"{"url": "\#(world.server.url("/small.bin"))", "directory": "\#(directory)"}"#)
            spelled.insert(try answer.decode(DownloadView.self).id)
        }
        #expect(spelled == [queued.id])
        let badHeader = try await daemon.call(
            .POST, "/api/v1/downloads", body: #"{"url": "http://x/y", "headers": {"X-A": "1\r\nX-B: 2"}}"#)
        #expect(badHeader.status == 400 && badHeader.errorCode == "usage", "\(badHeader.text)")
        // Still running, nothing lost, and the pause of a finished download is a conflict.
        _ = try await daemon.call(.PUT, "/api/v1/options", body: #"{"maxConcurrentDownloads": 2}"#)
        let finished = try await daemon.wait(for: queued.id, status: .completed)
        let conflict = try await daemon.call(.POST, "/api/v1/downloads/\(finished.id)/pause")
        #expect(conflict.status == 409 && conflict.errorCode == "conflict")
        // A batch with one finished download changes nothing.
        let mixed = try await daemon.call(
            .POST, "/api/v1/pause", body: #"{"ids": ["\#(running.id)", "\#(finished.id)"]}"#)
        #expect(mixed.status == 409 && mixed.errorCode == "conflict")
        #expect(try await daemon.download(running.id).status == .running)
        let ids = Set(try await daemon.list().map(\.id))
        #expect(ids == [running.id, queued.id])
        #expect(daemon.process.process.isRunning)
        await daemon.kill9()
        try await world.close()
    }

    /// `connections` and rate limits through the API: one file over four connections, the
    /// daemon's default for new downloads, the global limit and a download's own, live.
    @Test func severalConnectionsAndRateLimits() async throws {
        let world = try await World.make()
        // Large enough for four segments of the engine's 1 MiB minimum, slow enough to watch.
        let split = Payload(seed: 13, length: 5_000_000)
        // Bodies wait for a second request, so two connections overlap however slow the machine.
        world.server.setRoute("/split.bin", Route(payload: split, throttle: 400_000, bodyGate: BodyGate(requests: 2)))
        world.server.setRoute("/small.bin", Route(payload: small))
        let daemon = try await DaemonProcess.start(world)
        defer { daemon.process.signal(SIGKILL) }

        // Options: the defaults, then each change reflected in GET; a bad field changes nothing.
        var options = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self)
        #expect(options.connections == 1 && options.maxBytesPerSecond == nil)
        #expect(try await daemon.call(.GET, "/api/v1/options").text.contains(#""maxBytesPerSecond":null"#))
        _ = try await daemon.call(.PUT, "/api/v1/options", body: #"{"connections": 2, "maxBytesPerSecond": 104857600}"#)
        options = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self)
        #expect(options.connections == 2 && options.maxBytesPerSecond == 104_857_600)
        let refused = try await daemon.call(
            .PUT, "/api/v1/options", body: #"{"maxConcurrentDownloads": 7, "connections": 65}"#)
        #expect(refused.status == 400 && refused.errorCode == "bad-request")
        _ = try await daemon.call(.PATCH, "/api/v1/options", body: #"{"maxBytesPerSecond": null}"#)
        options = try await daemon.call(.GET, "/api/v1/options").decode(OptionsView.self)
        #expect(options.connections == 2 && options.maxBytesPerSecond == nil && options.maxConcurrentDownloads == 3)

        // Left out, `connections` is the daemon's default.
        let plain = try await daemon.add(world.server.url("/small.bin"), connections: nil)
        #expect(plain.maxConnections == 2 && plain.maxBytesPerSecond == nil)
        try await daemon.wait(for: plain.id, status: .completed)
        // A download's own limit: stored and shown (PUT is the same as PATCH); null removes it.
        let limited = try await daemon.call(
            .PATCH, "/api/v1/downloads/\(plain.id)", body: #"{"maxBytesPerSecond": 123456}"#)
        #expect(
            limited.status == 200 && (try? limited.decode(DownloadView.self).maxBytesPerSecond) == 123_456,
            "\(limited.text)")
        #expect(try await daemon.download(plain.id).maxBytesPerSecond == 123_456)
        #expect(try await world.record(plain.id)?.request.maxBytesPerSecond == 123_456, "the change is stored")
        let cleared = try await daemon.call(
            .PUT, "/api/v1/downloads/\(plain.id)", body: #"{"maxBytesPerSecond": null}"#)
        #expect(cleared.status == 200 && cleared.text.contains(#""maxBytesPerSecond":null"#), "\(cleared.text)")

        let events = try await daemon.events(until: { $0.contains(#""type":"completed""#) && $0.contains("split") })
        let answer = try await daemon.call(
            .POST, "/api/v1/downloads",
            body: #"{"url": "\#(world.server.url("/split.bin"))", "connections": 4, "maxBytesPerSecond": 50000000}"#)
        #expect(answer.status == 201, "\(answer.text)")
        let added = try answer.decode(DownloadView.self)
        #expect(added.maxConnections == 4 && added.maxBytesPerSecond == 50_000_000)

        // Poll the listing until it completes: it shows the live connections while it runs.
        var mostConnections = 0
        var changedLimit = false
        for _ in 0..<2400 {
            let listed = try #require(try await daemon.list().first { $0.id == added.id })
            if listed.status == .completed { break }
            #expect(listed.status == .queued || listed.status == .running, "\(listed)")
            #expect(listed.connections <= 4 && (listed.status == .running || listed.connections == 0))
            mostConnections = max(mostConnections, listed.connections)
            if listed.status == .running, !changedLimit {
                // ... and while it runs, applied at once.
                let patched = try await daemon.call(
                    .PATCH, "/api/v1/downloads/\(added.id)", body: #"{"maxBytesPerSecond": 40000000}"#)
                #expect(patched.status == 200, "\(patched.text)")
                changedLimit = true
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        let done = try await daemon.wait(for: added.id, status: .completed)
        #expect(mostConnections > 1, "the listing never showed more than \(mostConnections) connection(s)")
        #expect(world.server.peakConcurrentResponses(to: "/split.bin") > 1)
        #expect(
            world.sha256(of: world.directory + "/split.bin") == split.sha256,
            "path \(done.path ?? "-"), files \(world.files()), daemon: \(daemon.process.stderr.suffix(2000))")
        #expect(done.connections == 0 && done.maxConnections == 4)
        #expect(changedLimit)
        let limit = try await daemon.download(added.id).maxBytesPerSecond
        #expect(limit == 40_000_000)

        // The event stream: progress events carry the live count and the settings.
        let lines = try await events.value
        let progress = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["id"] as? String == added.id && $0["type"] as? String == "progress" }
        #expect(!progress.isEmpty)
        #expect(
            progress.contains { ($0["connections"] as? Int ?? 0) > 1 }, "\(progress.map { $0["connections"] ?? "-" })")
        #expect(progress.allSatisfy { $0["maxConnections"] as? Int == 4 && $0.keys.contains("maxBytesPerSecond") })
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    @Test func queueOrderMovesAndConcurrency() async throws {
        let world = try await World.make()
        for name in ["a", "b", "c", "d"] {
            world.server.setRoute("/\(name).bin", Route(payload: big, throttle: 100_000))
        }
        let daemon = try await DaemonProcess.start(world, ["-j", "1"])
        defer { daemon.process.signal(SIGKILL) }
        let a = try await daemon.add(world.server.url("/a.bin"))
        try await daemon.wait(for: a.id, status: .running)
        let b = try await daemon.add(world.server.url("/b.bin"))
        let c = try await daemon.add(world.server.url("/c.bin"))
        let d = try await daemon.add(world.server.url("/d.bin"))
        #expect(try await daemon.list("?status=queued").map(\.id) == [b.id, c.id, d.id])

        _ = try await daemon.call(.POST, "/api/v1/downloads/\(d.id)/move", body: #"{"to": "up"}"#)
        #expect(try await daemon.list("?status=queued").map(\.id) == [b.id, d.id, c.id])
        _ = try await daemon.call(.POST, "/api/v1/downloads/\(c.id)/move", body: #"{"to": "top"}"#)
        #expect(try await daemon.list("?status=queued").map(\.id) == [c.id, b.id, d.id])
        let urgent = try await daemon.add(world.server.url("/a.bin") + "?urgent", priority: 10)
        #expect(try await daemon.list("?status=queued").map(\.id) == [urgent.id, c.id, b.id, d.id])

        // Pausing the running one frees its slot for the head of the queue.
        _ = try await daemon.call(.POST, "/api/v1/downloads/\(a.id)/pause")
        try await daemon.wait(for: a.id, status: .paused)
        try await daemon.wait(for: urgent.id, status: .running)
        // A second slot starts the next in order.
        _ = try await daemon.call(.PUT, "/api/v1/options", body: #"{"maxConcurrentDownloads": 2}"#)
        try await daemon.wait(for: c.id, status: .running)
        #expect(try await daemon.list("?status=queued").map(\.id) == [b.id, d.id])

        let pausedAll = try await daemon.call(.POST, "/api/v1/pause", body: #"{"all": true}"#)
        #expect(try pausedAll.decode(CountView.self).count == 4)
        for id in [urgent.id, c.id, b.id, d.id] { try await daemon.wait(for: id, status: .paused) }
        let resumed = try await daemon.call(.POST, "/api/v1/resume", body: #"{"ids": ["\#(a.id)"]}"#)
        #expect(try resumed.decode(CountView.self).count == 1)
        try await daemon.wait(for: a.id, status: .running, where: { $0.completedLength > 0 })
        #expect(await daemon.terminate() == 0)
        try await world.close()
    }

    /// The issue's crash test: a download in every status, `kill -9`, restart, check each.
    @Test func killNineKeepsEveryStatus() async throws {
        let world = try await World.make()
        world.server.setRoute("/done.bin", Route(payload: small))
        world.server.setRoute("/missing.bin", Route(payload: small, then: .status(404)))
        for name in ["run1", "run2", "paused", "queued1", "queued2"] {
            world.server.setRoute("/\(name).bin", Route(payload: big, throttle: 150_000))
        }
        let daemon = try await DaemonProcess.start(world, ["-j", "2", "--checkpoint-interval", "0.05"])
        defer { daemon.process.signal(SIGKILL) }
        let done = try await daemon.add(world.server.url("/done.bin"))
        try await daemon.wait(for: done.id, status: .completed)
        let failed = try await daemon.add(world.server.url("/missing.bin"))
        try await daemon.wait(for: failed.id, status: .failed)
        let paused = try await daemon.add(world.server.url("/paused.bin"))
        let run1 = try await daemon.add(world.server.url("/run1.bin"))
        // Two slots: paused and run1 run, the rest wait; pausing one lets run2 in.
        let run2 = try await daemon.add(world.server.url("/run2.bin"))
        let queued1 = try await daemon.add(world.server.url("/queued1.bin"))
        let queued2 = try await daemon.add(world.server.url("/queued2.bin"))
        try await daemon.wait(for: paused.id, status: .running, where: { $0.completedLength > 0 })
        _ = try await daemon.call(.POST, "/api/v1/downloads/\(paused.id)/pause")
        try await daemon.wait(for: paused.id, status: .paused)
        let pausedAt = try await world.record(paused.id)?.completedLength ?? -1
        var checkpoints: [String: Int64] = [:]
        for id in [run1.id, run2.id] { checkpoints[id] = try await world.waitForCheckpoint(of: id, beyond: 0) }
        #expect(try await daemon.list("?status=queued").map(\.id) == [queued1.id, queued2.id])

        await daemon.kill9()
        let stored = try await world.statuses()
        #expect(
            stored == [
                done.id: "completed", failed.id: "failed", paused.id: "paused", run1.id: "running",
                run2.id: "running", queued1.id: "queued", queued2.id: "queued",
            ])

        for name in ["run1", "paused", "queued1", "queued2"] {
            world.server.setRoute("/\(name).bin", Route(payload: big, throttle: 2_000_000))
        }
        // run2 slower: run1's slot frees first, so queued1 starts alone, before queued2 (when
        // both slots freed together, the two first requests raced each other to the server).
        world.server.setRoute("/run2.bin", Route(payload: big, throttle: 500_000))
        let restarted = try await DaemonProcess.start(world, ["-j", "2"])
        defer { restarted.process.signal(SIGKILL) }
        for id in [run1.id, run2.id, queued1.id, queued2.id] { try await restarted.wait(for: id, status: .completed) }
        for name in ["run1", "run2", "queued1", "queued2"] {
            #expect(world.sha256(of: world.directory + "/\(name).bin") == big.sha256, "\(name)")
        }
        // Running ones resumed from their checkpoints; queued ones started after them, in order.
        for (name, id) in [("run1", run1.id), ("run2", run2.id)] {
            let resumedAt = try #require(world.server.requests(to: "/\(name).bin").last).rangeStart
            #expect(resumedAt >= checkpoints[id]! && resumedAt > 0, "\(name) resumed at \(resumedAt)")
        }
        let firstQueued = world.server.requests.firstIndex { $0.path == "/queued1.bin" }
        let secondQueued = world.server.requests.firstIndex { $0.path == "/queued2.bin" }
        #expect(firstQueued != nil && secondQueued != nil && firstQueued! < secondQueued!)
        // Paused stays paused, untouched; finished and failed keep their history.
        let stillPaused = try await restarted.download(paused.id)
        #expect(stillPaused.status == .paused && stillPaused.completedLength == pausedAt)
        #expect(world.server.requests(to: "/paused.bin").count == 1)
        #expect(try await restarted.download(done.id).status == .completed)
        #expect(world.sha256(of: world.directory + "/done.bin") == small.sha256)
        let stillFailed = try await restarted.download(failed.id)
        #expect(stillFailed.status == .failed && stillFailed.error?.code == "http-status")
        #expect(world.server.requests(to: "/done.bin").count == 1)

        // And the paused one resumes where it stopped when asked.
        _ = try await restarted.call(.POST, "/api/v1/downloads/\(paused.id)/resume")
        try await restarted.wait(for: paused.id, status: .completed)
        #expect(world.server.requests(to: "/paused.bin").last?.rangeStart == pausedAt)
        #expect(world.sha256(of: world.directory + "/paused.bin") == big.sha256)
        #expect(await restarted.terminate() == 0)
        try await world.close()
    }

    @Test func sigtermCheckpointsAndEndsOpenEventStreams() async throws {
        let world = try await World.make()
        world.server.setRoute("/big.bin", Route(payload: big, throttle: 200_000))
        let daemon = try await DaemonProcess.start(world, ["--checkpoint-interval", "10"])
        defer { daemon.process.signal(SIGKILL) }
        let download = try await daemon.add(world.server.url("/big.bin"))
        try await daemon.wait(for: download.id, status: .running, where: { $0.completedLength > 0 })
        let watch = try HaulProcess(["watch"], home: world.home, workingDirectory: world.directory)
        defer { watch.signal(SIGKILL) }
        try await waitUntil { watch.stdout.contains(download.id) }

        #expect(await daemon.terminate() == 0, "\(daemon.process.stderr)")
        #expect(await watch.wait() == 0, "\(watch.stderr)")
        #expect(watch.stdout.contains("daemon stopped"))
        // The stop checkpointed (the interval alone would not have) and left it running.
        let record = try #require(try await world.record(download.id))
        #expect(record.status == .running && record.completedLength > 0)

        world.server.setRoute("/big.bin", Route(payload: big))
        let restarted = try await DaemonProcess.start(world)
        defer { restarted.process.signal(SIGKILL) }
        try await restarted.wait(for: download.id, status: .completed)
        #expect(world.server.requests(to: "/big.bin").last!.rangeStart >= record.completedLength)
        #expect(world.sha256(of: world.directory + "/big.bin") == big.sha256)
        #expect(await restarted.terminate() == 0)
        try await world.close()
    }
}

struct BadCall {
    enum Token { case good, missing, wrong }
    var method: HTTPMethod
    var path: String
    var body: String?
    var token: Token
    var status: Int
    var code: String

    init(_ method: HTTPMethod, _ path: String, _ body: String?, token: Token = .good, _ status: Int, _ code: String) {
        (self.method, self.path, self.body, self.token, self.status, self.code) = (
            method, path, body, token, status, code
        )
    }
}

extension World {
    func record(_ id: String) async throws -> DownloadRecord? {
        let store = try await SQLiteDownloadStore.open(path: home + "/haul.sqlite")
        defer { Task { try? await store.close() } }
        return try await store.record(DownloadID(rawValue: id))
    }

    func statuses() async throws -> [String: String] {
        let store = try await SQLiteDownloadStore.open(path: home + "/haul.sqlite")
        defer { Task { try? await store.close() } }
        return Dictionary(
            uniqueKeysWithValues: try await store.records(status: nil).map { ($0.id.rawValue, $0.status.rawValue) })
    }

    func waitForCheckpoint(of id: String, beyond offset: Int64) async throws -> Int64 {
        for _ in 0..<2400 {
            if let record = try? await record(id), record.completedLength > offset { return record.completedLength }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestFailure("no checkpoint of \(id) beyond \(offset)")
    }
}

extension DaemonProcess {
    /// Opens the event stream now; the task gives back its `data` lines up to and including the
    /// first for which `stop` is true (or all of them, if the stream ends first).
    func events(until stop: @escaping @Sendable (String) -> Bool) async throws -> Task<[String], any Error> {
        var request = HTTPClientRequest(url: serve.url + "/api/v1/events")
        request.headers.add(name: "Authorization", value: "Bearer \(serve.secret)")
        let response = try await Self.http.execute(request, timeout: .seconds(120))
        #expect(response.status == .ok)
        return Task {
            var lines: [String] = []
            var pending: [UInt8] = []
            for try await buffer in response.body {
                pending.append(contentsOf: buffer.readableBytesView)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    guard line.hasPrefix("data: ") else { continue }
                    lines.append(String(line.dropFirst(6)))
                    if stop(lines.last!) { return lines }
                }
            }
            return lines
        }
    }
}

/// Polls a condition; bounded so a hang fails instead of blocking the suite.
func waitUntil(_ condition: () async throws -> Bool) async throws {
    for _ in 0..<2400 {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(25))
    }
    throw TestFailure("condition never became true")
}
