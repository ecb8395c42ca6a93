import AsyncHTTPClient
import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import NIOCore
import Testing

@testable import Haul

/// Issue 30, as an aria2 front-end drives the daemon: slow downloads that never finish hold
/// every slot but one, more wait behind them, and a ring of small files goes through the last
/// slot, each added with `addUri` at position 0 while the one running ends; other clients read
/// (`tellStatus`, `getGlobalStat`, `tellActive`, `tellWaiting`) and add at the tail meanwhile.
/// After every completion the slot must go to a ring download at the head, never to a slow one
/// from behind.
@Suite(.timeLimit(.minutes(5))) struct QueueRingTests {
    static let ringFiles = 200

    @Test func everyFreedSlotGoesToTheRingAtTheHead() async throws {
        try await withDaemon(jobs: 3) { api, server in
            server.setRoute("/slow", Route(payload: Payload(seed: 61, length: 100_000_000), throttle: 20_000))
            try await ring(api, server)
        }
    }

    /// Issue 45, as `control_plane.py` found it: the ring's files are large (more than
    /// `QueueSlots.shortFinish`), so each one's finish is long: the test holds its fsync until it
    /// lets it go. A large download holds its slot through its finish, as aria2 counts it active
    /// until it completes; when it completes, its slot goes to the ring's download at the head,
    /// and one added at position 0 then waits at the head for the next completion. (When the slot
    /// went at the end of the transfer, the next ring download finished its transfer while the
    /// first was still held, its slot went to a slow download, and the ring waited for good.)
    @Test func aLongFinishKeepsItsSlotForTheRing() async throws {
        let root = NSTemporaryDirectory() + "haul-ring-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await TestServer.start()
        server.setRoute("/slow", Route(payload: Payload(seed: 62, length: 100_000_000), throttle: 20_000))
        let finishes = FinishGates()
        var calls = FileCalls.system
        calls.sync = { descriptor, path in
            finishes.pass(path)
            return FileCalls.system.sync(descriptor, path)
        }
        var configuration = Daemon.Configuration(
            port: 0, home: root + "/home", downloadDirectory: root + "/downloads", maxConcurrentDownloads: 3)
        configuration.manager.fileCalls = calls
        let api = try await DaemonAPI.start(configuration)
        defer { finishes.openAll() }
        let length = QueueSlots.shortFinish + (1 << 20)
        func bigFile(_ index: Int) -> String {
            server.setRoute("/big-\(index)", Route(payload: Payload(seed: UInt64(2_000 + index), length: length)))
            return server.url("/big-\(index)")
        }
        var slow: [String] = []
        for index in 0..<6 {
            let gid = try await addUri(api, server.url("/slow?n=\(index)"), name: "slow-\(index).bin")
            if index < 3 { slow.append(gid) }
        }
        #expect(try await polled { try await gids(api.rpc("aria2.tellActive", #"["gid"]"#)).count == 3 })
        var running = try await addUri(api, bigFile(0), name: "big-0.bin", position: 0)
        var reserve = try await addUri(api, bigFile(1), name: "big-1.bin", position: 1)
        var indexOf = [running: 0, reserve: 1]
        #expect(try await api.rpc("aria2.changeGlobalOption", #"{"max-concurrent-downloads": "4"}"#).contains(#""OK""#))
        for next in 2..<8 {
            let finishing = running
            let index = indexOf[finishing]!
            // Every byte is in and its finish is held: the reserve waits at the head meanwhile.
            #expect(try await polled { finishes.arrived("big-\(index).bin") }, "big-\(index) reached its fsync")
            #expect(try gids(try await api.rpc("aria2.tellWaiting", #"0, 1, ["gid"]"#)) == [reserve])
            finishes.open("big-\(index).bin")
            #expect(try await polled { try await status(api, finishing) == "complete" }, "big-\(index)")
            // The front-end saw it complete: the next one goes to the head.
            let new = try await addUri(api, bigFile(next), name: "big-\(next).bin", position: 0)
            indexOf[new] = next
            var active: [String] = []
            #expect(
                try await polled {
                    active = try await gids(api.rpc("aria2.tellActive", #"["gid"]"#))
                    return active.count == 4 && active.contains(reserve)
                }, "after big-\(index): \(active)")
            try #require(
                Set(active) == Set(slow + [reserve]),
                "after big-\(index) the slot went to \(active), not to the ring's \(reserve)")
            let waiting = try gids(try await api.rpc("aria2.tellWaiting", #"0, 1, ["gid"]"#))
            #expect(waiting == [new], "big-\(next) waits at the head")
            #expect(
                Payload(seed: UInt64(2_000 + index), length: length).mismatch(
                    inFileAt: root + "/downloads/big-\(index).bin") == nil)
            try FileManager.default.removeItem(atPath: root + "/downloads/big-\(index).bin")
            _ = try await api.rpc("aria2.removeDownloadResult", #""\(finishing)""#)
            (running, reserve) = (reserve, new)
        }
        #expect(!finishes.expired, "a held fsync had to be let go by its gate's own limit")
        finishes.openAll()
        try await api.stop()
        try await server.shutdown()
    }

    /// The ring's file `index`: its own path, whose body waits until a second request to it
    /// arrives, the test's own (`release`), so the test says when each one ends.
    private func ringFile(_ index: Int, _ server: TestServer) -> String {
        server.setRoute(
            "/ring-\(index)",
            Route(
                payload: Payload(seed: UInt64(1_000 + index), length: 16_000),
                bodyGate: BodyGate(requests: 2, atMost: .seconds(120))))
        return server.url("/ring-\(index)")
    }

    private func release(_ index: Int, _ server: TestServer) async throws {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: server.url("/ring-\(index)")), timeout: .seconds(120))
        _ = try await response.body.collect(upTo: 1 << 20)
    }

    private func gid(_ answer: String) throws -> String {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], "\(answer)")
        return try #require(object["result"] as? String, "\(answer)")
    }

    private func gids(_ answer: String) throws -> [String] {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], "\(answer)")
        let list = try #require(object["result"] as? [[String: Any]], "\(answer)")
        return list.compactMap { $0["gid"] as? String }
    }

    private func status(_ api: DaemonAPI, _ gid: String) async throws -> String {
        let answer = try await api.rpc("aria2.tellStatus", #""\#(gid)", ["status"]"#)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], "\(answer)")
        return try #require((object["result"] as? [String: Any])?["status"] as? String, "\(answer)")
    }

    private func addUri(_ api: DaemonAPI, _ url: String, name: String, position: Int? = nil) async throws -> String {
        let tail = position.map { ", \($0)" } ?? ""
        return try gid(try await api.rpc("aria2.addUri", #"["\#(url)"], {"out": "\#(name)"}\#(tail)"#))
    }

    private func ring(_ api: DaemonAPI, _ server: TestServer) async throws {
        var slow: [String] = []
        for index in 0..<3 {
            slow.append(try await addUri(api, server.url("/slow?n=\(index)"), name: "slow-\(index).bin"))
        }
        for index in 3..<30 { _ = try await addUri(api, server.url("/slow?n=\(index)"), name: "slow-\(index).bin") }
        #expect(try await polled { try await gids(api.rpc("aria2.tellActive", #"["gid"]"#)).count == 3 })
        // The ring: the first at position 0, the next at position 1, behind it.
        var running = try await addUri(api, ringFile(0, server), name: "ring-0.bin", position: 0)
        var reserve = try await addUri(api, ringFile(1, server), name: "ring-1.bin", position: 1)
        var indexOf = [running: 0, reserve: 1]
        #expect(try await api.rpc("aria2.changeGlobalOption", #"{"max-concurrent-downloads": "4"}"#).contains(#""OK""#))
        #expect(try await polled { try await gids(api.rpc("aria2.tellActive", #"["gid"]"#)).contains(running) })

        // Other clients meanwhile: reads in a loop, and adds at the tail.
        let watched = slow[0]
        let readers = (0..<3).map { client in
            Task {
                var calls = 0
                while !Task.isCancelled {
                    switch (client + calls) % 4 {
                    case 0: _ = try await api.rpc("aria2.tellStatus", #""\#(watched)", ["status", "completedLength"]"#)
                    case 1: _ = try await api.rpc("aria2.getGlobalStat")
                    case 2: _ = try await api.rpc("aria2.tellActive", #"["gid", "status"]"#)
                    default: _ = try await api.rpc("aria2.tellWaiting", #"0, 50, ["gid"]"#)
                    }
                    calls += 1
                }
                return calls
            }
        }
        let adder = Task {
            var added = 0
            while !Task.isCancelled, added < 300 {
                _ = try await addUri(api, server.url("/slow?n=tail-\(added)"), name: "tail-\(added).bin")
                added += 1
            }
            return added
        }
        defer {
            for reader in readers { reader.cancel() }
            adder.cancel()
        }

        for next in 2..<(Self.ringFiles + 2) {
            // The next ring file is added at position 0 while the running one ends.
            let finishing = running
            async let added = addUri(api, ringFile(next, server), name: "ring-\(next).bin", position: 0)
            try await release(indexOf[finishing]!, server)
            let new = try await added
            indexOf[new] = next
            #expect(try await polled { try await status(api, finishing) == "complete" }, "ring-\(indexOf[finishing]!)")
            // The slot went to a ring download at the head: the reserve, or the new one if its
            // add came first. The other waits at position 0. No slow download took it.
            var active: [String] = []
            #expect(
                try await polled {
                    active = try await gids(api.rpc("aria2.tellActive", #"["gid"]"#))
                    return active.count == 4 && !active.contains(finishing)
                }, "after ring-\(indexOf[finishing]!): \(active)")
            let ringActive = active.filter { $0 == reserve || $0 == new }
            try #require(
                ringActive.count == 1 && Set(active).isSuperset(of: slow),
                "after ring-\(indexOf[finishing]!) the slot went to \(active), not to ring \(reserve) or \(new)")
            running = ringActive[0]
            reserve = running == new ? reserve : new
            let waiting = try gids(try await api.rpc("aria2.tellWaiting", #"0, 1, ["gid"]"#))
            #expect(waiting == [reserve], "ring-\(indexOf[reserve]!) waits at the head")
            _ = try await api.rpc("aria2.removeDownloadResult", #""\#(finishing)""#)
        }
        for reader in readers {
            reader.cancel()
            #expect(await reader.result.calls > 0, "the readers ran")
        }
        adder.cancel()
        #expect(await adder.result.calls > 0, "the adds at the tail ran")
        try await release(indexOf[running]!, server)
        try await release(indexOf[reserve]!, server)
    }
}

extension Result where Success == Int {
    /// What a loop that ran until cancelled counted (a cancelled call's error ends it).
    var calls: Int { (try? get()) ?? 1 }
}

/// Polls until `condition` holds, for at most about a minute (a hang guard, not a time limit).
private func polled(_ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<6_000 {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// One gate per ring file: the fsyncs of `big-N.bin` (its `.part` and its directory's entry for
/// it) are held until the test opens that file's gate; every other fsync passes.
private final class FinishGates: @unchecked Sendable {
    private let lock = NSLock()
    private var gates: [String: Gate] = [:]

    private func gate(_ name: String) -> Gate {
        lock.withLock {
            if let gate = gates[name] { return gate }
            let gate = Gate()
            gates[name] = gate
            return gate
        }
    }

    /// Holds an fsync of a ring file's `.part` until its gate opens.
    func pass(_ path: String) {
        let file = String(path.split(separator: "/").last ?? "")
        guard file.hasPrefix("big-"), let name = file.split(separator: ".").first else { return }
        gate(name + ".bin").pass(path)
    }

    func arrived(_ name: String) -> Bool { !gate(name).arrivals.isEmpty }
    func open(_ name: String) { gate(name).open() }
    func openAll() { for gate in lock.withLock({ Array(gates.values) }) { gate.open() } }
    var expired: Bool { lock.withLock { gates.values.contains { $0.expired } } }
}
