import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulStore
import HaulTesting
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HaulServer

/// The daemon's routes driven through HummingbirdTesting's router, without a socket
/// (`Daemon.buildRouter`): the token, the Host check, an add through the API that a real
/// download completes, and aria2's JSON-RPC. (A handful of tests still run the whole daemon,
/// live: `InProcessDaemon`, and the binary in `HaulEndToEndTests`.)
@Suite(.timeLimit(.minutes(1))) struct DaemonRouterTests {
    static let secret = "router-test-secret"

    /// The routes on a manager of their own (SQLite in a fresh directory; downloads at once:
    /// `jobs`, else the default), and a test server.
    func withRoutes(
        jobs: Int? = nil,
        _ body: @escaping @Sendable (any TestClientProtocol, DownloadManager, TestServer) async throws -> Void
    ) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("haul-router-\(UUID().uuidString)")
            .path
        let downloads = root + "/downloads"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) } // a temporary directory: a leftover is harmless
        var configuration = Daemon.Configuration(home: root + "/state", downloadDirectory: downloads)
        configuration.manager.downloadRoots = [downloads]
        if let jobs { configuration.manager.maxConcurrentDownloads = jobs }
        let server = try await TestServer.start()
        do {
            try await DownloadManager.withManager(configuration: configuration.manager) { manager in
                let parts = Daemon.routeParts(
                    configuration: configuration, manager: manager, metrics: DaemonMetrics(),
                    secret: Self.secret, descriptorLimit: 1024, stopper: ShutdownTrigger())
                let application = Application(router: Daemon.buildRouter(parts))
                try await application.test(.router) { client in try await body(client, manager, server) }
            }
        } catch {
            try await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    static var authorized: HTTPFields { [.authorization: "Bearer \(secret)", .contentType: "application/json"] }

    @Test func theAPIWantsTheToken() async throws {
        try await withRoutes { client, _, _ in
            try await client.execute(uri: "/api/v1/summary", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(
                uri: "/api/v1/summary", method: .get, headers: [.authorization: "Bearer wrong-token-here"]
            ) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/api/v1/summary", method: .get, headers: Self.authorized) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("maxConcurrentDownloads"))
            }
        }
    }

    @Test func anAddThroughTheAPIIsDownloaded() async throws {
        try await withRoutes { client, manager, server in
            let payload = Payload(seed: 80, length: 50_000)
            server.setRoute("/file", Route(payload: payload))
            let body = ByteBuffer(string: #"{"url": "\#(server.url("/file"))"}"#)
            let id = try await client.execute(
                uri: "/api/v1/downloads", method: .post, headers: Self.authorized, body: body
            ) { response in
                #expect(response.status == .created)
                let view =
                    try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any]
                return try DownloadID(parsing: view?["id"] as? String ?? "")
            }
            #expect(try await manager.outcome(of: id).status == .completed)
            try await client.execute(uri: "/api/v1/downloads/\(id)", method: .get, headers: Self.authorized) {
                response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""status":"completed""#))
            }
        }
    }

    /// Two Host headers: which one names the daemon is anyone's guess, so neither does. (The
    /// router sees the first as the request's authority; HummingbirdTesting sends none, so a
    /// foreign authority is checked live, in `DaemonHardeningTests`.)
    @Test func twoHostHeadersAreRefused() async throws {
        try await withRoutes { client, _, _ in
            var headers = Self.authorized
            headers[.init("Host")!] = "localhost"
            try await client.execute(uri: "/api/v1/summary", method: .get, headers: headers) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    @Test func aria2sJSONRPCAnswers() async throws {
        try await withRoutes { client, _, _ in
            let call = ByteBuffer(
                string: #"{"jsonrpc":"2.0","id":"1","method":"aria2.getVersion","params":["token:\#(Self.secret)"]}"#)
            try await client.execute(
                uri: "/jsonrpc", method: .post, headers: [.contentType: "application/json"], body: call
            ) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""version""#))
            }
            let wrong = ByteBuffer(
                string: #"{"jsonrpc":"2.0","id":"1","method":"aria2.getVersion","params":["token:nope"]}"#)
            try await client.execute(
                uri: "/jsonrpc", method: .post, headers: [.contentType: "application/json"], body: wrong
            ) { response in
                #expect(String(buffer: response.body).contains("Unauthorized"))
            }
        }
    }
}
