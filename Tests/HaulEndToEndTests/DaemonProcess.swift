import AsyncHTTPClient
import Foundation
import HaulAPI
import HaulCore
import HaulServer
import NIOCore
import NIOHTTP1
import Testing

/// A `haul serve` child process on a free port, and a small client for its API.
final class DaemonProcess: @unchecked Sendable {
    let process: HaulProcess
    let serve: ServeFile
    let world: World

    static let http = HTTPClient(eventLoopGroupProvider: .singleton)

    /// Starts the daemon and waits until it wrote `serve.json` (bounded, so a broken build fails).
    /// `shell`: commands run before `exec haul serve` (`ulimit -n 256`).
    static func start(
        _ world: World, _ extra: [String] = [], shell: String? = nil, environment: [String: String] = [:]
    ) async throws -> DaemonProcess {
        try? FileManager.default.removeItem(atPath: ServeFile.path(home: world.home))
        let process = try HaulProcess(
            ["serve", "--port", "0", "-d", world.directory] + extra,
            home: world.home, workingDirectory: world.directory, shell: shell, environment: environment)
        for _ in 0..<1200 {
            if let file = try? ServeFile.read(home: world.home), file.pid == process.process.processIdentifier {
                return DaemonProcess(process: process, serve: file, world: world)
            }
            if !process.process.isRunning { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        process.signal(SIGKILL)
        throw TestFailure("haul serve did not start: \(process.stderr)")
    }

    private init(process: HaulProcess, serve: ServeFile, world: World) {
        self.process = process
        self.serve = serve
        self.world = world
    }

    struct Answer {
        var status: Int
        var body: Data
        var json: Any? { try? JSONSerialization.jsonObject(with: body) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
        /// The stable error code of an error answer.
        var errorCode: String? { ((json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// One API call; `token` nil sends no Authorization header.
    func call(
        _ method: HTTPMethod, _ path: String, body: String? = nil, token: String?? = .none,
        timeout: TimeAmount = .seconds(60)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: serve.url + path)
        request.method = method
        let bearer: String? =
            switch token {
            case .none: serve.secret
            case .some(let value): value
            }
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await Self.http.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return Answer(status: Int(response.status.code), body: Data(buffer.readableBytesView))
    }

    /// `connections`: a fixed count by default (1, the daemon's `-x`), so what a test counts on
    /// the server does not depend on growth; nil names none, and the download finds its count.
    func add(_ url: String, priority: Int = 0, connections: Int? = 1) async throws -> DownloadView {
        let count = connections.map { #", "connections": \#($0)"# } ?? ""
        let answer = try await call(
            .POST, "/api/v1/downloads", body: #"{"url": "\#(url)", "priority": \#(priority)\#(count)}"#)
        #expect(answer.status == 201, "\(answer.text)")
        return try answer.decode(DownloadView.self)
    }

    func download(_ id: String) async throws -> DownloadView {
        try await call(.GET, "/api/v1/downloads/\(id)").decode(DownloadView.self)
    }

    func list(_ query: String = "") async throws -> [DownloadView] {
        try await call(.GET, "/api/v1/downloads" + query).decode([DownloadView].self)
    }

    /// Polls until the download reaches `status` (bounded: a hang fails the test, no timing is asserted).
    @discardableResult
    func wait(for id: String, status: DownloadStatus, where condition: (DownloadView) -> Bool = { _ in true })
        async throws -> DownloadView
    {
        var last: DownloadView?
        for _ in 0..<2400 {
            let download = try await self.download(id)
            if download.status == status, condition(download) { return download }
            last = download
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestFailure("\(id) never reached \(status); last \(String(describing: last))")
    }

    /// The port `serve.json` names.
    var port: Int { Int(serve.url.split(separator: ":").last ?? "") ?? 0 }

    func kill9() async {
        process.signal(SIGKILL)
        _ = await process.wait()
    }

    /// SIGTERM and the exit status.
    func terminate() async -> Int32 {
        process.signal(SIGTERM)
        return await process.wait()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
