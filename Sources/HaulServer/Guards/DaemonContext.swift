import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// A request context that knows its connection, so a request that shows the token can tell the
/// `ConnectionGuard` that its connection is a client's, not an idle stranger's.
protocol ConnectionContext {
    var channel: any Channel { get }
}

/// The HTTP routes' context: Hummingbird's basic one plus the connection.
struct DaemonRequestContext: RequestContext, ConnectionContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The WebSocket routes' context: `BasicWebSocketRequestContext` plus the connection.
struct DaemonWebSocketContext: RequestContext, WebSocketRequestContext, ConnectionContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
