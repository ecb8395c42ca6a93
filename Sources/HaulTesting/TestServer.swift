import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A local HTTP/1.1 server that serves ``Payload``s and injects ``Fault``s exactly on the wire.
///
/// Download-manager tests need a server that misbehaves on cue (drops, stalls, lies about
/// lengths, ignores ranges, changes the file) and that reports what it was asked. This one runs
/// on its own event loop thread, listens on an ephemeral port by default so tests can run in
/// parallel, and records every request.
///
/// ```swift
/// let server = try await TestServer.start()
/// server.setRoute("/file", Route(payload: Payload(seed: 1, length: 1 << 20), script: [.dropAfter(1000)]))
/// // ... download server.url("/file"), then check the file with payload.mismatch(inFileAt:)
/// try await server.shutdown()
/// ```
public final class TestServer: Sendable {
    /// The port the server listens on (the one the OS picked when started with port 0).
    public let port: Int

    private let origin: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let state: ServerState
    private let isShutDown = NIOLockedValueBox(false)

    private init(
        port: Int, origin: String, group: MultiThreadedEventLoopGroup, channel: any Channel, state: ServerState
    ) {
        self.port = port
        self.origin = origin
        self.group = group
        self.channel = channel
        self.state = state
    }

    /// Starts a server on `host`, on an ephemeral port unless `port` is given.
    /// - Parameter tls: serve HTTPS with this certificate and key (PEM files) instead of HTTP.
    public static func start(host: String = "127.0.0.1", port: Int = 0, tls: TLSFiles? = nil) async throws -> TestServer
    {
        let sslContext = try tls.map { files in
            try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: NIOSSLCertificate.fromPEMFile(files.certificatePath).map { .certificate($0) },
                    privateKey: .privateKey(NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem))))
        }
        // A private one-thread group: shutting it down closes every connection, including
        // stalled ones, so a test never leaks sockets into the next.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = ServerState()
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // The plans set Content-Length / Transfer-Encoding themselves; NIO must not
                        // rewrite them, or faults such as a lying Content-Length could not be sent.
                        var encoder = HTTPResponseEncoder.Configuration()
                        encoder.automaticallySetFramingHeaders = false
                        if let sslContext {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                        }
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                            withEncoderConfiguration: encoder
                        )
                        try channel.pipeline.syncOperations.addHandler(HTTPFaultHandler(state: state))
                    }
                }
                .bind(host: host, port: port)
                .get()
            guard let boundPort = channel.localAddress?.port else {
                throw TestServerError.noLocalAddress
            }
            let origin = "\(tls == nil ? "http" : "https")://\(urlHost(host)):\(boundPort)"
            state.origin = origin
            return TestServer(port: boundPort, origin: origin, group: group, channel: channel, state: state)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    deinit {
        // Safety net for a test that forgot `shutdown()`: release the thread and sockets.
        if !isShutDown.withLockedValue({ $0 }) {
            group.shutdownGracefully { _ in }
        }
    }

    /// The absolute URL of `path` on this server, e.g. `http://127.0.0.1:PORT/file`.
    public func url(_ path: String) -> String {
        origin + path
    }

    /// Serves `route` at `path` (matched without the query string), replacing any previous route
    /// and restarting its script. Requests to paths without a route get 404.
    public func setRoute(_ path: String, _ route: Route) {
        state.setRoute(path, route)
    }

    /// Every request received, in order of arrival.
    public var requests: [RecordedRequest] {
        state.requests
    }

    /// The requests received for `path`, in order of arrival.
    public func requests(to path: String) -> [RecordedRequest] {
        state.requests.filter { $0.path == path }
    }

    /// Total payload body bytes written for `path` over all requests (error and redirect texts
    /// are not counted). Updated as each chunk is handed to the kernel, so a test can wait for
    /// it (``wait(until:)``) while a throttled response is running, or check that a resume did not refetch.
    public func bodyBytesSent(to path: String) -> Int64 {
        state.bodyBytes(to: path)
    }

    /// Every response sent, in order of arrival of the requests they answer.
    public var responses: [ServedResponse] {
        state.responses(to: nil)
    }

    /// The responses to requests for `path`, in order of arrival of the requests, with how many
    /// body bytes each has sent so far. Refused requests (``ConnectionCap``) are included with
    /// ``ServedResponse/refused`` set.
    public func responses(to path: String) -> [ServedResponse] {
        state.responses(to: path)
    }

    /// The highest number of payload responses to `path` that were in flight at once (counted
    /// as for ``ConnectionCap``, whether or not the route has a cap), over the server's life.
    public func peakConcurrentResponses(to path: String) -> Int {
        state.peakInFlight(to: path)
    }

    /// The highest number of payload responses to any path that were in flight at once.
    public func peakConcurrentResponses() -> Int {
        state.peakInFlight()
    }

    /// How many distinct TCP connections sent at least one request for `path`.
    public func connectionCount(to path: String) -> Int {
        state.connectionCount(to: path)
    }

    /// How many TCP connections the server has accepted (a TLS one whose handshake failed too).
    public var acceptedConnections: Int {
        state.connectionsAccepted
    }

    /// Connections a ``Fault/holdAfter(_:)`` has held since the server started. The server
    /// closes none of them before it shuts down: only the client can.
    public var heldConnections: Int {
        state.held
    }

    /// Returns once `condition` holds for this server: checked now and after every request,
    /// response, body chunk and connection it sees, never on a timer. Returns early when the
    /// waiting task is cancelled (a test's time limit); the result is whether it holds.
    ///
    /// ```swift
    /// #expect(await server.wait { $0.requests(to: "/file").count == 2 })
    /// ```
    @discardableResult
    public func wait(until condition: @escaping @Sendable (TestServer) -> Bool) async -> Bool {
        await state.changes.wait { [self] in condition(self) }
    }

    /// Stops listening and closes every connection, including stalled ones. Safe to call twice.
    public func shutdown() async throws {
        let alreadyShutDown = isShutDown.withLockedValue { isShutDown in
            defer { isShutDown = true }
            return isShutDown
        }
        guard !alreadyShutDown else { return }
        try? await channel.close()
        try await group.shutdownGracefully()
    }

    private static func urlHost(_ host: String) -> String {
        switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "[::1]"
        default: host.contains(":") ? "[\(host)]" : host
        }
    }
}

/// Errors from starting a ``TestServer``.
public enum TestServerError: Error, Sendable {
    /// The listening socket reported no local address, so the port is unknown.
    case noLocalAddress
}

/// A certificate and its private key, as PEM files, for an HTTPS test server.
public struct TLSFiles: Sendable {
    public var certificatePath: String
    public var privateKeyPath: String

    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}
