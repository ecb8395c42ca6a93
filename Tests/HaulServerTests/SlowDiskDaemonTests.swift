import AsyncHTTPClient
import Foundation
@testable import Haul
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import NIOCore
import NIOHTTP1
import Testing

/// The whole daemon in this process (`Daemon.run`, its manager, its HTTP API) while a disk holds
/// back the writes of more downloads than Swift's cooperative pool has threads (issue 20): the
/// API still answers, and another download added through it still completes.
@Suite(.timeLimit(.minutes(4))) struct SlowDiskDaemonTests {
    static let heldCount = ProcessInfo.processInfo.activeProcessorCount + 1

    struct API {
        let serve: ServeFile
        static let http = HTTPClient(eventLoopGroupProvider: .singleton)

        func call(_ method: HTTPMethod, _ path: String, body: String? = nil, root: String = "/api/v1") async throws -> (status: Int, body: Data) {
            var request = HTTPClientRequest(url: serve.url + root + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(serve.secret)")
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await Self.http.execute(request, timeout: .seconds(60))
            let bytes = try await response.body.collect(upTo: 16 << 20)
            return (Int(response.status.code), Data(bytes.readableBytesView))
        }

        func add(_ url: String, fileName: String) async throws -> DownloadView {
            let answer = try await call(.POST, "/downloads", body: #"{"url": "\#(url)", "fileName": "\#(fileName)"}"#)
            #expect(answer.status == 201)
            return try JSONDecoder().decode(DownloadView.self, from: answer.body)
        }

        func download(_ id: String) async throws -> DownloadView {
            try JSONDecoder().decode(DownloadView.self, from: try await call(.GET, "/downloads/\(id)").body)
        }

        /// Polls until the download is completed (or failed), at most about a minute: a hang guard.
        func finished(_ id: String) async throws -> DownloadView {
            for _ in 0..<600 {
                let view = try await download(id)
                if view.status == .completed || view.status == .failed { return view }
                try await Task.sleep(for: .milliseconds(100))
            }
            return try await download(id)
        }
    }

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
        var configuration = Daemon.Configuration(port: 0, home: root + "/home", downloadDirectory: root + "/downloads",
                                                 maxConcurrentDownloads: Self.heldCount + 1)
        configuration.manager.fileCalls = calls
        let (ready, announce) = AsyncStream.makeStream(of: ServeFile.self)
        let daemon = Task { try await Daemon(configuration: configuration).run(ready: { announce.yield($0) }) }
        var started: ServeFile?
        for await file in ready {
            started = file
            break
        }
        let api = API(serve: try #require(started))

        var held: [DownloadView] = []
        for index in 0..<Self.heldCount {
            held.append(try await api.add(server.url("/file"), fileName: "held-\(index)"))
        }
        #expect(try await eventually { Set(gate.arrivals).count == Self.heldCount }, "every held download reached its disk")

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
        // The daemon's own way out: its graceful shutdown, as SIGTERM would start it.
        let shutdown = try await api.call(
            .POST, "", body: #"{"jsonrpc": "2.0", "id": "1", "method": "aria2.shutdown", "params": ["token:\#(api.serve.secret)"]}"#,
            root: "/jsonrpc")
        #expect(shutdown.status == 200)
        try await daemon.value
        try await server.shutdown()
    }

    /// Polls until `condition` holds, for at most about a minute (a hang guard).
    func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<12_000 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}
