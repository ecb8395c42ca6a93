import HTTPTypes
import Haul
import HaulAPI
import HaulCore
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/jsonrpc` over HTTP: POST with a JSON body, GET with `?method=&id=&params=BASE64` (and
/// `jsoncallback` for JSONP), OPTIONS for a CORS preflight. Every answer allows any origin, as
/// `aria2c --rpc-allow-origin-all` does: the token, not the origin, is what protects the queue,
/// and web front-ends such as AriaNg are served from other origins.
enum Aria2Routes {
    static func register<Context: RequestContext & ConnectionContext>(
        _ rpc: Aria2RPC, connections: ConnectionGuard, on router: Router<Context>
    ) {
        router.post("jsonrpc") { request, context in
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: Aria2RPC.maxRequestSize)
            } catch {
                return response(
                    Aria2RPC.failure(id: .null, Aria2Error(code: -32600, message: "Request too large."), status: 413))
            }
            let reply = await rpc.answer(Array(body.readableBytesView))
            if reply.authenticated { connections.authenticated(context.channel) }
            return response(reply)
        }
        router.get("jsonrpc") { request, context in
            let query = request.uri.queryParameters
            let reply = await rpc.answer(method: query.get("method"), id: query.get("id"), params: query.get("params"))
            if reply.authenticated { connections.authenticated(context.channel) }
            guard let callback = query.get("jsoncallback") else { return response(reply) }
            guard callback.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." || $0 == "$" }) else {
                return response(Aria2RPC.failure(id: .null, .invalidRequest, status: 400))
            }
            var body = ByteBuffer(string: callback + "(")
            body.writeBytes(reply.body)
            body.writeString(")")
            return Response(
                status: .init(code: reply.status), headers: headers("text/javascript"), body: .init(byteBuffer: body))
        }
        router.on("jsonrpc", method: .options) { request, _ in
            var fields = headers(nil)
            if request.headers[.origin] != nil, request.headers[.accessControlRequestMethod] != nil {
                fields[.accessControlAllowMethods] = "POST, GET, OPTIONS"
                fields[.accessControlMaxAge] = "1728000"
                if let asked = request.headers[.accessControlRequestHeaders] {
                    fields[.accessControlAllowHeaders] = asked
                }
            }
            return Response(status: .ok, headers: fields)
        }
    }

    static func response(_ reply: Aria2RPC.Reply) -> Response {
        Response(
            status: .init(code: reply.status), headers: headers("application/json-rpc"),
            body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
    }

    static func headers(_ contentType: String?) -> HTTPFields {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        fields[.cacheControl] = "no-cache"
        fields[.accessControlAllowOrigin] = "*"
        return fields
    }

    /// `ws://HOST:PORT/jsonrpc`: the same requests as text (or binary) messages, answered as
    /// text, and aria2's notifications pushed as downloads start, pause, stop, complete or fail:
    /// to a socket once it has sent a request with the valid token, and from the start to a
    /// listener (`listensWithoutToken`). Any other socket learns nothing before the token: not
    /// even which ids exist and when they change. Unlike the HTTP endpoint, an upgrade from a
    /// page of another origin is refused: a browser lets any page open a WebSocket to localhost.
    static func registerWebSocket(
        _ rpc: Aria2RPC, events: @escaping @Sendable () -> AsyncStream<DownloadEvent>,
        outcomes: @escaping @Sendable () -> AsyncStream<DownloadOutcome>,
        hosts: HostCheck, connections: ConnectionGuard, on router: Router<DaemonWebSocketContext>
    ) {
        router.ws(
            "jsonrpc",
            shouldUpgrade: { request, _ in
                hosts.allows(origin: request.headers[.origin], authority: request.head.authority)
                    ? .upgrade([:]) : .dontUpgrade
            },
            onUpgrade: { inbound, outbound, context in
                let listener = listensWithoutToken(
                    origin: context.request.headers[.origin], authority: context.request.head.authority,
                    fetchSite: context.request.headers[fetchSite],
                    peer: context.requestContext.channel.remoteAddress)
                let shown = NIOLockedValueBox(false)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    // Starts come from the event stream (which keeps only the newest events); how a
                    // download ended comes from the outcome stream, which never drops one: a
                    // completion is never lost however many downloads end at once.
                    group.addTask {
                        for await event in events() {
                            guard case .started = event.kind else { continue }
                            try await notify(event, listener: listener, shown: shown, outbound: outbound)
                        }
                    }
                    group.addTask {
                        for await outcome in outcomes() {
                            try await notify(outcome.finalEvent, listener: listener, shown: shown, outbound: outbound)
                        }
                    }
                    for try await message in inbound.messages(maxSize: Aria2RPC.maxRequestSize) {
                        let bytes: [UInt8] =
                            switch message {
                            case .text(let text): Array(text.utf8)
                            case .binary(let buffer): Array(buffer.readableBytesView)
                            }
                        let reply = await rpc.answer(bytes)
                        if reply.authenticated, !shown.withLockedValue({ $0 }) {
                            shown.withLockedValue { $0 = true }
                            connections.authenticated(context.requestContext.channel)
                        }
                        try await outbound.write(.text(String(decoding: reply.body, as: UTF8.self)))
                    }
                    group.cancelAll()
                }
            })
    }

    /// Whether a socket hears notifications before it shows the token: a listener, as aria2p's
    /// `listen_to_notifications` is, which connects and only listens. That is an upgrade
    /// - from this machine (a loopback peer),
    /// - not made by a browser: without `Sec-Fetch-Site`, which every current browser sends with
    ///   a WebSocket handshake and no page can leave out,
    /// - with no `Origin`, or one naming the very host the request was sent to
    ///   (websocket-client, which aria2p uses, sends `Origin: http://HOST:PORT` of the URL it
    ///   opens).
    ///
    /// Such a socket hears gids and event names, nothing a call could not be refused; its calls
    /// still need the token. A browser's socket (the daemon's own page included) and one from
    /// another host hear nothing before the token.
    static func listensWithoutToken(origin: String?, authority: String?, fetchSite: String?, peer: SocketAddress?)
        -> Bool
    {
        // A peer's address as a socket bound to `::` reports an IPv4 one: `::ffff:127.0.0.1`
        // (which `Daemon.isLoopback`, judging names a user gives, does not take).
        guard fetchSite == nil, let address = peer?.ipAddress,
            Daemon.isLoopback(address) || address.hasPrefix("::ffff:127.")
        else { return false }
        guard let origin else { return true }
        guard let authority, !authority.isEmpty else { return false }
        return origin == "http://\(authority)" || origin == "https://\(authority)"
    }

    /// The field every current browser sends with a WebSocket handshake (`listensWithoutToken`).
    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!

    /// Sends aria2's notification for `event`, if it has one: to a listener at once, to any other
    /// socket once it has shown the token.
    static func notify(
        _ event: DownloadEvent, listener: Bool, shown: NIOLockedValueBox<Bool>,
        outbound: WebSocketOutboundWriter
    ) async throws {
        guard listener || shown.withLockedValue({ $0 }), let method = notification(for: event.kind) else { return }
        var json = JSONWriter()
        json.object { json in
            json.field("jsonrpc", "2.0")
            json.field("method", method)
            json.field("params") { json in
                json.array([event.id.rawValue]) { json, gid in json.object { $0.field("gid", gid) } }
            }
        }
        try await outbound.write(.text(String(decoding: json.bytes, as: UTF8.self)))
    }

    /// aria2's notification for an event, if it has one.
    static func notification(for kind: DownloadEvent.Kind) -> String? {
        switch kind {
        case .started: "aria2.onDownloadStart"
        case .paused: "aria2.onDownloadPause"
        case .removed: "aria2.onDownloadStop"
        case .completed, .alreadyComplete: "aria2.onDownloadComplete"
        case .failed: "aria2.onDownloadError"
        default: nil
        }
    }
}
