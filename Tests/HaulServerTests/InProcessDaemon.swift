import AsyncHTTPClient
import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulServer
import HaulTesting
import NIOCore
import NIOHTTP1
import Testing

/// `Daemon.run` in this process, and its HTTP API and aria2 RPC called over a real socket.
struct DaemonAPI {
    let serve: ServeFile
    let task: Task<Void, any Error>
    static let http = HTTPClient(eventLoopGroupProvider: .singleton)

    /// Starts the daemon and returns once it listens.
    static func start(_ configuration: Daemon.Configuration) async throws -> DaemonAPI {
        let (ready, announce) = AsyncStream.makeStream(of: ServeFile.self)
        let task = Task { try await Daemon(configuration: configuration).run(ready: { announce.yield($0) }) }
        for await file in ready {
            return DaemonAPI(serve: file, task: task)
        }
        try await task.value
        throw CancellationError()
    }

    func call(_ method: HTTPMethod, _ path: String, body: String? = nil, root: String = "/api/v1") async throws -> (
        status: Int, body: Data
    ) {
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

    /// One aria2 JSON-RPC call with the token; the answer's text.
    func rpc(_ method: String, _ params: String = "") async throws -> String {
        let tail = params.isEmpty ? "" : ", " + params
        let body =
            #"{"jsonrpc": "2.0", "id": "1", "method": "\#(method)", "params": ["token:\#(serve.secret)"\#(tail)]}"#
        return String(decoding: try await call(.POST, "", body: body, root: "/jsonrpc").body, as: UTF8.self)
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

    /// The daemon's own way out: its graceful shutdown, as SIGTERM would start it.
    func stop() async throws {
        #expect(try await rpc("aria2.shutdown").contains(#""result":"OK""#))
        try await task.value
    }
}

/// Polls until `condition` holds, for at most about a minute (a hang guard, not a time limit).
func eventually(_ condition: () throws -> Bool) async throws -> Bool {
    for _ in 0..<12_000 {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}

/// A daemon in this process (downloads at once: `jobs`, else the daemon's default) and a test
/// server; both stopped when `body` returns or throws, the daemon by its own shutdown.
func withDaemon(jobs: Int? = nil, _ body: (DaemonAPI, TestServer) async throws -> Void) async throws {
    let root = NSTemporaryDirectory() + "haul-daemon-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: root) }
    let server = try await TestServer.start()
    var configuration = Daemon.Configuration(port: 0, home: root + "/home", downloadDirectory: root + "/downloads")
    if let jobs { configuration.manager.maxConcurrentDownloads = jobs }
    let api = try await DaemonAPI.start(configuration)
    do {
        try await body(api, server)
        try await api.stop()
    } catch {
        // The body failed, or its test's time limit cancelled it (then no call reaches the
        // daemon): the daemon's task is cancelled, which shuts its manager down.
        api.task.cancel()
        if case .failure(let stopError) = await api.task.result, !(stopError is CancellationError) {
            Issue.record(stopError, "the daemon's end after the test's failure")
        }
        try await server.shutdown()
        throw error
    }
    try await server.shutdown()
}
