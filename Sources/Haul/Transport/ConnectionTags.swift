import AsyncHTTPClient
import HaulCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Tells the transport which connection each response came over, so a download can report how
/// many connections (and TLS handshakes) its requests cost (`TransferStats`).
///
/// AsyncHTTPClient has no public connection-created callback and tells the connection of a
/// request in only one place: the `ahc-connection-id` metadata of the request logger, on the
/// debug message "Request was scheduled on connection", over HTTP/1 alone (its HTTP/2 streams
/// never log through the request's logger). What it does offer for every connection it makes is
/// a debug initializer with the connection's channel, and for every HTTP/2 stream one with the
/// stream's channel. In them the transport numbers the connection and puts a small handler
/// where the response heads pass (after the HTTP/1 decoder; after the HTTP/2-to-HTTP/1 codec of
/// each stream) that adds `x-haul-connection: NUMBER EXCHANGE` to each final head: the
/// connection's number and how many heads came over it before. The transport takes that field
/// out again before anyone else sees the headers; nothing goes on the wire.
enum ConnectionTags {
    /// The field the handler adds; a server's own field of that name is replaced.
    static let field = "x-haul-connection"

    /// Installs the debug initializers on a client's configuration; `numbers` hands out the
    /// connection numbers of every client of one transport.
    static func install(on configuration: inout HTTPClient.Configuration, numbers: ConnectionNumbers, logger: Logger) {
        configuration.http1_1ConnectionDebugInitializer = { channel in
            onLoop(channel, logger: logger) {
                try ReceiveBuffers.limit(channel, logger: logger)
            } then: {
                let pipeline = channel.pipeline.syncOperations
                let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
                try pipeline.addHandler(ConnectionTagHandler(ConnectionTag(numbers.take())), position: .after(decoder))
            }
        }
        configuration.http2ConnectionDebugInitializer = { channel in
            onLoop(channel, logger: logger) {
                try ReceiveBuffers.limit(channel, logger: logger)
            } then: {
                // The streams find it here; a handler that only passes everything on.
                try channel.pipeline.syncOperations.addHandler(ConnectionTag(numbers.take()), position: .last)
            }
        }
        configuration.http2StreamChannelDebugInitializer = { stream in
            onLoop(
                stream, logger: logger,
                then: {
                    // A stream runs on its connection's event loop.
                    guard let connection = stream.parent else { throw ConnectionTagError.noParent }
                    let tag = try connection.pipeline.syncOperations.handler(type: ConnectionTag.self)
                    let pipeline = stream.pipeline.syncOperations
                    let codec = try pipeline.handler(type: HTTP2FramePayloadToHTTP1ClientCodec.self)
                    try pipeline.addHandler(ConnectionTagHandler(tag), position: .after(codec))
                })
        }
    }

    /// Runs `body` on the channel's event loop, after `limit` (the connection's receive buffers,
    /// see `ReceiveBuffers`) when given. A failure of either only costs the count or the memory
    /// saving (the connection works as it is), so it is logged, never handed to AsyncHTTPClient,
    /// which would fail the connection.
    private static func onLoop(
        _ channel: any Channel, logger: Logger, _ limit: (@Sendable () throws -> Void)? = nil,
        then body: @escaping @Sendable () throws -> Void
    ) -> EventLoopFuture<Void> {
        let run: @Sendable () -> Void = {
            if let limit {
                do {
                    try limit()
                } catch {
                    logger.warning("cannot limit this connection's receive buffers", metadata: ["error": "\(error)"])
                }
            }
            do {
                try body()
            } catch {
                logger.warning("cannot count this connection", metadata: ["error": "\(error)"])
            }
        }
        if channel.eventLoop.inEventLoop {
            run()
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        return channel.eventLoop.submit(run)
    }

    /// The connection and exchange a response head was tagged with; nil when it was not.
    static func parse(_ headers: HTTPHeaders) -> (connection: Int, exchange: Int)? {
        guard let value = headers.first(name: field) else { return nil }
        let words = value.split(separator: " ")
        guard words.count == 2, let connection = Int(words[0]), let exchange = Int(words[1]) else { return nil }
        return (connection, exchange)
    }
}

enum ConnectionTagError: Error {
    case noParent
}

/// Hands out connection numbers, unique over a transport's life.
final class ConnectionNumbers: Sendable {
    private let next = NIOLockedValueBox(0)

    func take() -> Int {
        next.withLockedValue { next in
            defer { next += 1 }
            return next
        }
    }
}

/// One connection's number and how many final response heads it has brought. Shared by the
/// streams of an HTTP/2 connection, which all run on its event loop; in the connection's
/// pipeline it passes everything on.
final class ConnectionTag: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    let number: Int
    var exchanges = 0

    init(_ number: Int) {
        self.number = number
    }
}

/// Adds `x-haul-connection` to each final response head (see `ConnectionTags`).
final class ConnectionTagHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private let tag: ConnectionTag

    init(_ tag: ConnectionTag) {
        self.tag = tag
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Interim (1xx) heads are not answers; only final ones count as exchanges.
        guard case .head(var head) = unwrapInboundIn(data), head.status.code >= 200 else {
            context.fireChannelRead(data)
            return
        }
        head.headers.replaceOrAdd(name: ConnectionTags.field, value: "\(tag.number) \(tag.exchanges)")
        tag.exchanges += 1
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }
}
