import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import Testing

/// `addUri` with a position, when a free slot takes the download at once: the download has no
/// place in the queue to take, and the call still answers its gid (it used to answer "not found
/// in the waiting queue" whenever the run had not stored `running` yet).
@Suite(.timeLimit(.minutes(2))) struct Aria2PositionTests {
    /// `withDaemon` with `route` at `path` on its test server.
    private func withDaemon(
        _ path: String, _ route: Route, jobs: Int? = nil,
        _ body: (DaemonAPI, TestServer) async throws -> Void
    ) async throws {
        try await HaulServerTests.withDaemon(jobs: jobs) { api, server in
            server.setRoute(path, route)
            try await body(api, server)
        }
    }

    @Test func anAddThatStartsAtOnceAnswersItsGid() async throws {
        try await withDaemon("/slow", Route(payload: Payload(seed: 9, length: 50_000_000), throttle: 100_000), jobs: 8)
        { api, server in
            for index in 0..<8 {
                // Each finds a free slot: it starts while addUri puts it at position 0.
                let answer = try await api.rpc(
                    "aria2.addUri", #"["\#(server.url("/slow"))?n=\#(index)"], {"out": "f\#(index).bin"}, 0"#)
                #expect(answer.contains(#""result":""#), "\(index): \(answer)")
            }
            // All eight run (each stores `running` when its run begins).
            var active = ""
            for _ in 0..<2_000 {
                active = try await api.rpc("aria2.tellActive", #"["gid"]"#)
                if active.components(separatedBy: "gid").count - 1 == 8 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(active.components(separatedBy: "gid").count - 1 == 8, "\(active)")
        }
    }

    /// `getGlobalStat` sums the speed of the downloads running now.
    @Test func globalStatSumsTheRunningDownloadsSpeed() async throws {
        try await withDaemon("/slow", Route(payload: Payload(seed: 10, length: 50_000_000), throttle: 200_000)) {
            api, server in
            for index in 0..<2 {
                _ = try await api.rpc(
                    "aria2.addUri", #"["\#(server.url("/slow"))?n=\#(index)"], {"out": "s\#(index).bin"}"#)
            }
            var stat = ""
            for _ in 0..<3_000 {
                stat = try await api.rpc("aria2.getGlobalStat")
                if stat.contains(#""numActive":"2""#), !stat.contains(#""downloadSpeed":"0""#) { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(stat.contains(#""numActive":"2""#) && !stat.contains(#""downloadSpeed":"0""#), "\(stat)")
        }
    }

    /// Issue 32, requirement 8: one download running at 64 KiB/s with the concurrency at 1, then
    /// two more added, one of them paused: the running one's speed still shows.
    @Test func globalStatShowsTheSpeedWithDownloadsWaitingBehind() async throws {
        try await withDaemon("/slow", Route(payload: Payload(seed: 12, length: 50_000_000), throttle: 65_536), jobs: 1)
        { api, server in
            _ = try await api.rpc("aria2.addUri", #"["\#(server.url("/slow"))?n=0"], {"out": "r0.bin"}"#)
            _ = try await api.rpc("aria2.addUri", #"["\#(server.url("/slow"))?n=1"], {"out": "r1.bin"}"#)
            _ = try await api.rpc(
                "aria2.addUri", #"["\#(server.url("/slow"))?n=2"], {"out": "r2.bin", "pause": "true"}"#)
            var stat = ""
            for _ in 0..<1_000 {
                stat = try await api.rpc("aria2.getGlobalStat")
                if stat.contains(#""numActive":"1""#), !stat.contains(#""downloadSpeed":"0""#) { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(stat.contains(#""numActive":"1""#) && stat.contains(#""numWaiting":"2""#), "\(stat)")
            #expect(!stat.contains(#""downloadSpeed":"0""#), "\(stat)")
            // And at every call while it runs, not only once.
            var zeros: [String] = []
            for _ in 0..<100 {
                stat = try await api.rpc("aria2.getGlobalStat")
                if stat.contains(#""downloadSpeed":"0""#) { zeros.append(stat) }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(zeros.isEmpty, "\(zeros.count) of 100 calls said 0: \(zeros.first ?? "")")
        }
    }

    /// Issue 45, part 5: a download paused and resumed is counted active as soon as its run
    /// stores `running`, before its meter has a rate (its second tick): `getGlobalStat` gave
    /// its count from the store and its speed from the ticks, and said 0 meanwhile.
    @Test func globalStatKeepsTheSpeedOfAResumedDownload() async throws {
        try await withDaemon("/slow", Route(payload: Payload(seed: 13, length: 50_000_000), throttle: 200_000), jobs: 1)
        { api, server in
            let added = try await api.rpc("aria2.addUri", #"["\#(server.url("/slow"))"], {"out": "p.bin"}"#)
            let gid = try #require(added.split(separator: "\"").dropLast().last.map(String.init))
            var stat = ""
            for _ in 0..<3_000 {
                stat = try await api.rpc("aria2.getGlobalStat")
                if stat.contains(#""numActive":"1""#), !stat.contains(#""downloadSpeed":"0""#) { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(stat.contains(#""numActive":"1""#) && !stat.contains(#""downloadSpeed":"0""#), "\(stat)")
            #expect(try await api.rpc("aria2.pause", #""\#(gid)""#).contains(gid))
            var status = ""
            for _ in 0..<3_000 where !status.contains(#""status":"paused""#) {
                status = try await api.rpc("aria2.tellStatus", #""\#(gid)", ["status"]"#)
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(status.contains(#""status":"paused""#), "\(status)")
            #expect(try await api.rpc("aria2.unpause", #""\#(gid)""#).contains(gid))
            // Every answer from the moment it is counted again, through its first ticks.
            var counted: [String] = []
            var calls = 0
            while counted.count < 100, calls < 20_000 {
                calls += 1
                stat = try await api.rpc("aria2.getGlobalStat")
                if stat.contains(#""numActive":"1""#) { counted.append(stat) }
            }
            #expect(counted.count == 100)
            let zeros = counted.filter { $0.contains(#""downloadSpeed":"0""#) }
            let saidZero = zeros.count
            #expect(saidZero == 0, "\(saidZero) of \(counted.count) said 0: \(zeros.first ?? "")")
        }
    }

    /// A position that cannot be taken is an RPC error, not an OK with the gid (it was dropped by
    /// a `try?`): the URL of a download already complete is not queued again, so it has no place.
    @Test func aPositionThatCannotBeTakenIsAnError() async throws {
        try await withDaemon("/file", Route(payload: Payload(seed: 11, length: 10_000))) { api, server in
            let added = try await api.add(server.url("/file"), fileName: "file.bin")
            #expect(try await api.finished(added.id).status == .completed)
            // Without a position, adding it again answers the download it is.
            let again = try await api.rpc("aria2.addUri", #"["\#(server.url("/file"))"], {"out": "file.bin"}"#)
            #expect(again.contains(#""result":"\#(added.id)""#), "\(again)")
            let answer = try await api.rpc("aria2.addUri", #"["\#(server.url("/file"))"], {"out": "file.bin"}, 0"#)
            #expect(answer.contains(#""error""#) && answer.contains(#""code":1"#), "\(answer)")
        }
    }
}
