import AsyncHTTPClient
import Foundation
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import NIOCore
import NIOHTTP1
import Testing

@testable import Haul

/// The whole daemon in this process (`Daemon.run`, its manager, its HTTP API) while a disk holds
/// back the writes of more downloads than Swift's cooperative pool has threads (issue 20): the
/// API still answers, and another download added through it still completes.
@Suite(.timeLimit(.minutes(4))) struct SlowDiskDaemonTests {
    static let heldCount = ProcessInfo.processInfo.activeProcessorCount + 1

    @Test func theAPIAnswersAndAnotherDownloadCompletesWhileWritesAreHeld() async throws {
        let root = NSTemporaryDirectory() + "haul-slow-disk-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try await TestServer.start()
        let payload = Payload(seed: 21, length: 3 << 20)
        server.setRoute("/file", Route(payload: payload))
        let gate = Gate()
        var calls = FileCalls.system
        calls.write = { descriptor, vectors, count, offset, path in
            if path.contains("/held-") { gate.pass(path) }
            return FileCalls.system.write(descriptor, vectors, count, offset, path)
        }
        var configuration = Daemon.Configuration(
            port: 0, home: root + "/home", downloadDirectory: root + "/downloads",
            maxConcurrentDownloads: Self.heldCount + 1)
        configuration.manager.fileCalls = calls
        let api = try await DaemonAPI.start(configuration)

        var held: [DownloadView] = []
        for index in 0..<Self.heldCount {
            held.append(try await api.add(server.url("/file"), fileName: "held-\(index)"))
        }
        #expect(
            try await eventually { Set(gate.arrivals).count == Self.heldCount }, "every held download reached its disk")

        let listing = try await api.call(.GET, "/downloads")
        #expect(listing.status == 200)
        let listed = try JSONDecoder().decode([DownloadView].self, from: listing.body)
        #expect(Set(listed.filter { $0.status == .running }.map(\.id)) == Set(held.map(\.id)))
        #expect(try await api.call(.GET, "/summary").status == 200)

        let free = try await api.add(server.url("/file"), fileName: "free")
        #expect(try await api.finished(free.id).status == .completed)
        #expect(payload.mismatch(inFileAt: root + "/downloads/free") == nil)
        #expect(!gate.isOpen, "the API answered and the other download finished while the held writes were still held")

        gate.open()
        for (index, view) in held.enumerated() {
            #expect(try await api.finished(view.id).status == .completed)
            #expect(payload.mismatch(inFileAt: root + "/downloads/held-\(index)") == nil)
        }
        #expect(!gate.expired, "a held write had to be let go by the gate's own limit")
        try await api.stop()
        try await server.shutdown()
    }
}
