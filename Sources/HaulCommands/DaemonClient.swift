import ArgumentParser
import AsyncHTTPClient
import HaulAPI
import HaulCore
import NIOCore
import NIOHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `haul add/ls/pause/resume/rm/watch` reach the daemon: the address and token from
/// `$HAUL_HOME/serve.json`, unless `--server` and `--secret` say otherwise.
struct DaemonOptions: ParsableArguments {
    @Option(help: "The daemon's URL (default: from $HAUL_HOME/serve.json).")
    var server: String?

    @Option(help: "The daemon's token (default: $HAUL_SECRET, else from $HAUL_HOME/serve.json).")
    var secret: String?

    func client() throws -> DaemonClient {
        let home = HaulHome.path()
        let token = secret ?? ProcessInfo.processInfo.environment["HAUL_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        if let server {
            let server = server.hasSuffix("/") ? String(server.dropLast()) : server
            // The local daemon's token goes only to the local daemon, never to another host;
            // the local file is read only when no token was given.
            let file = try token == nil ? ServeFile.read(home: home) : nil
            guard let token = token ?? (file?.url == server ? file?.secret : nil) else {
                throw HaulError(.usage, "--server \(server) needs --secret or $HAUL_SECRET")
            }
            return DaemonClient(baseURL: server, secret: token)
        }
        guard let file = try ServeFile.read(home: home) else {
            throw DaemonError(.noDaemon, "no haul daemon is running (start one with 'haul serve')")
        }
        if kill(file.pid, 0) != 0, errno == ESRCH {
            throw DaemonError(
                .noDaemon,
                """
                no haul daemon is running (pid \(file.pid) in \(ServeFile.path(home: home)) is gone; start one \
                with 'haul serve')
                """
            )
        }
        return DaemonClient(baseURL: file.url, secret: token ?? file.secret)
    }
}

/// A small JSON client for the API (docs/API.md). Errors come back as the daemon's `HaulError`.
struct DaemonClient: Sendable {
    /// `text` as one segment of a path: every byte but an ASCII letter or digit percent-encoded.
    static func pathSegment(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    let baseURL: String
    let secret: String
    /// How long a request may wait for its whole answer.
    var timeout: Duration = .seconds(60)

    private static let http = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: .init(timeout: .init(connect: .seconds(2), read: .seconds(30))))

    func get<Response: Decodable>(_ path: String, as type: Response.Type = Response.self) async throws -> Response {
        try await send(.GET, path, body: nil as String?)
    }

    func send<Body: Encodable, Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: Body?, as type: Response.Type = Response.self
    ) async throws -> Response {
        let data = try await raw(method, path, body: body)
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw HaulError(.internal, "unexpected answer from the daemon at \(baseURL)", underlying: error)
        }
    }

    /// The body of a successful answer, as sent.
    func raw<Body: Encodable>(
        _ method: HTTPMethod, _ path: String, body: Body?
    ) async throws -> Data {
        var request = HTTPClientRequest(url: baseURL + "/api/v1" + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let data: Data
        let response: HTTPClientResponse
        do {
            response = try await Self.http.execute(request, timeout: TimeAmount(timeout))
            data = Data(try await response.body.collect(upTo: 512 << 20).readableBytesView)
        } catch {
            throw transportFailure(error)
        }
        guard (200..<300).contains(response.status.code) else { throw Self.error(response.status, data) }
        return data
    }

    /// A daemon that took the connection but did not answer in time is not "no daemon": it is
    /// there, busy or stuck, and starting another would be refused.
    func transportFailure(_ error: any Error) -> any Error & Sendable {
        if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout {
            return HaulError(
                .network,
                "the haul daemon at \(baseURL) accepted the request but did not answer within "
                    + "\(timeout) (it may be busy; try again)", underlying: error)
        }
        return DaemonError(
            .noDaemon, "no haul daemon answers at \(baseURL) (start one with 'haul serve')", underlying: error)
    }

    /// The event stream, one decoded event at a time, until the daemon closes it.
    func events() async throws -> AsyncThrowingStream<EventView, any Error> {
        var request = HTTPClientRequest(url: baseURL + "/api/v1/events")
        request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        let response: HTTPClientResponse
        do {
            response = try await Self.http.execute(request, timeout: .hours(24 * 365))
        } catch {
            throw transportFailure(error)
        }
        guard response.status == .ok else {
            throw Self.error(response.status, Data(try await response.body.collect(upTo: 1 << 20).readableBytesView))
        }
        return AsyncThrowingStream { continuation in
            let task = Task {
                var parser = ServerSentEvents()
                var unreadable = UnreadableEvents()
                do {
                    for try await buffer in response.body {
                        for data in parser.feed(buffer.readableBytesView) {
                            if let event = unreadable.decode(data) { continuation.yield(event) }
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(
                        throwing: DaemonError(
                            .noDaemon, "the haul daemon at \(baseURL) broke off its event stream",
                            underlying: error))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private static func error(_ status: HTTPResponseStatus, _ data: Data) -> any Error & Sendable {
        do {
            let body = try JSONDecoder().decode(ErrorBody.self, from: data)
            return body.error.error(httpStatus: Int(status.code))
        } catch {
            return HaulError(
                .internal, "the daemon answered \(status.code) \(status.reasonPhrase)",
                httpStatus: Int(status.code), underlying: error)
        }
    }
}

/// Splits a Server-Sent Events byte stream into the `data` of each event.
struct ServerSentEvents {
    private var line: [UInt8] = []
    private var data: [UInt8] = []

    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Data] {
        var complete: [Data] = []
        for byte in bytes {
            guard byte == UInt8(ascii: "\n") else {
                line.append(byte)
                continue
            }
            if line.isEmpty {
                if !data.isEmpty { complete.append(Data(data)) }
                data = []
            } else if line.starts(with: Array("data:".utf8)) {
                var value = line.dropFirst(5)
                if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
                if !data.isEmpty { data.append(UInt8(ascii: "\n")) }
                data.append(contentsOf: value)
            }
            line = []
        }
        return complete
    }
}

/// Reads the events of the daemon's stream, and says on stderr which it cannot read: of a kind a
/// newer daemon knows and this haul does not, or (the same version) a bug in how one is written,
/// which would otherwise go unseen. Each different failure is said once, ten at most, so a newer
/// daemon's stream cannot bury the display; the stream goes on without the event.
struct UnreadableEvents {
    /// The failures already said, by their text.
    private(set) var reported: Set<String> = []
    /// Different failures said at most.
    static let limit = 10
    /// Where a failure is said: stderr, but for tests.
    var report: (String) -> Void = { StandardStreams.error($0) }

    /// The event in `data`, or nil (said, the first times) when it cannot be read.
    mutating func decode(_ data: Data) -> EventView? {
        do {
            return try JSONDecoder().decode(EventView.self, from: data)
        } catch {
            let text = "\(error)"
            guard reported.count < Self.limit, reported.insert(text).inserted else { return nil }
            let more = reported.count == Self.limit ? " (further unreadable events are not said)" : ""
            report("haul: skipped an event from the daemon that this haul cannot read: \(text)\(more)\n")
            return nil
        }
    }
}
