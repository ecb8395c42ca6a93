import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps connections that never show the token from using up the daemon's descriptors.
///
/// Every accepted connection is *unauthenticated* until one of its requests carries the valid
/// token (`Authorization: Bearer`, aria2's `token:`). At most `maxUnauthenticated` of those are
/// kept: one more closes the oldest of them, so a client that sends its request at once (every
/// real client) always gets through, however many idle sockets an attacker holds. A
/// connection's first request head must also arrive within `headerTimeout` (a slow sender
/// that trickles header bytes is closed); later requests are bounded by the HTTP server's own
/// idle timeout.
public final class ConnectionGuard: Sendable {
    public struct Configuration: Sendable {
        /// How long a new connection may take to send its first request head.
        public var headerTimeout: Duration = .seconds(10)
        /// How long a keep-alive connection may sit between requests.
        public var idleTimeout: Duration = .seconds(60)
        /// Connections that have not shown the token, kept at once; clamped at start so they
        /// cannot take more than half the descriptors the process may open.
        public var maxUnauthenticated: Int = 256

        public init() {}
    }

    private struct Entry {
        var sequence: UInt64
        var channel: any Channel
    }

    private struct State {
        var next: UInt64 = 0
        var unauthenticated: [ObjectIdentifier: Entry] = [:]
    }

    public let configuration: Configuration
    /// The bound after clamping to the descriptor limit.
    public let maxUnauthenticated: Int
    private let state = NIOLockedValueBox(State())
    private let logger: Logger

    public init(configuration: Configuration, descriptorLimit: Int, logger: Logger) {
        self.configuration = configuration
        // The store, the downloads' sockets and files, and authenticated clients need the rest.
        maxUnauthenticated = max(4, min(configuration.maxUnauthenticated, (descriptorLimit - 64) / 2))
        self.logger = logger
    }

    /// A new connection; closes the oldest unauthenticated one if there are too many.
    func opened(_ channel: any Channel) {
        let evicted: (any Channel)? = state.withLockedValue { state in
            state.next += 1
            state.unauthenticated[ObjectIdentifier(channel)] = Entry(sequence: state.next, channel: channel)
            guard state.unauthenticated.count > maxUnauthenticated,
                let oldest = state.unauthenticated.min(by: { $0.value.sequence < $1.value.sequence })
            else { return nil }
            state.unauthenticated[oldest.key] = nil
            return oldest.value.channel
        }
        if let evicted {
            logger.debug(
                "closing an unauthenticated connection to make room",
                metadata: ["remote": "\(evicted.remoteAddress.map { "\($0)" } ?? "?")"])
            evicted.pipeline.fireUserInboundEventTriggered(ConnectionGuardHandler.Shut())
        }
    }

    func closed(_ channel: any Channel) {
        state.withLockedValue { $0.unauthenticated[ObjectIdentifier(channel)] = nil }
    }

    /// A request on `channel` carried the valid token: it is never closed to make room.
    public func authenticated(_ channel: any Channel) {
        state.withLockedValue { $0.unauthenticated[ObjectIdentifier(channel)] = nil }
    }

    /// Connections open that have not shown the token.
    public var unauthenticatedCount: Int { state.withLockedValue { $0.unauthenticated.count } }

    /// The handler that goes first in every connection's pipeline.
    func handler() -> ConnectionGuardHandler {
        ConnectionGuardHandler(guard: self, headerTimeout: configuration.headerTimeout)
    }

    /// Raises the soft limit on open descriptors to the hard limit (as nginx's
    /// `worker_rlimit_nofile` would) and answers the limit in force.
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        // getrlimit cannot fail for RLIMIT_NOFILE; 1024 is the usual default if it ever did.
        guard getrlimit(Self.noFile, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            #if canImport(Darwin)
                raised.rlim_cur = min(raised.rlim_cur, rlim_t(OPEN_MAX))
            #endif
            if setrlimit(Self.noFile, &raised) == 0 { limit = raised }
        }
        // RLIM_INFINITY clamps to Int.max: no bound but the configured one.
        return Int(clamping: limit.rlim_cur)
    }

    #if canImport(Glibc)
        private static let noFile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
        private static let noFile = RLIMIT_NOFILE
    #endif
}

/// First in the pipeline, on raw bytes: registers the connection with the guard and closes it
/// if its first request head (up to the blank line) has not arrived in time.
final class ConnectionGuardHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let connectionGuard: ConnectionGuard
    private let headerTimeout: Duration
    private var timer: Scheduled<Void>?
    /// How much of "\r\n\r\n" the bytes so far end with; 4 once the first head is complete.
    private var matched = 0

    init(guard connectionGuard: ConnectionGuard, headerTimeout: Duration) {
        self.connectionGuard = connectionGuard
        self.headerTimeout = headerTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard timer == nil, matched < 4 else { return }
        connectionGuard.opened(context.channel)
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: TimeAmount(headerTimeout)) {
            channel.pipeline.fireUserInboundEventTriggered(Shut())
        }
    }

    /// Closes the connection: evicted, too slow, or the server is stopping.
    struct Shut {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is Shut:
            shut(context)
        case is ChannelShouldQuiesceEvent where matched < 4:
            // Stopping: a connection still waiting for its first head would hold the server open.
            shut(context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func shut(_ context: ChannelHandlerContext) {
        timer?.cancel()
        if matched < 4 {
            // Tells the HTTP upgrade handler waiting for a first head that none will come, so the
            // server ends the connection quietly rather than logging a failed upgrade.
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        context.close(mode: .all, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        connectionGuard.closed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if matched < 4 {
            let buffer = unwrapInboundIn(data)
            for byte in buffer.readableBytesView {
                matched =
                    switch (matched, byte) {
                    case (0, 13), (2, 13): matched + 1
                    case (1, 10), (3, 10): matched + 1
                    case (_, 13): 1
                    default: 0
                    }
                if matched == 4 {
                    timer?.cancel()
                    break
                }
            }
        }
        context.fireChannelRead(data)
    }
}

/// Puts a `ConnectionGuardHandler` in front of every connection of `Base` (behind TLS, if any).
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let connectionGuard: ConnectionGuard

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            // Last of what is there so far: first of all on plain HTTP, right after the TLS
            // handler with TLS (it must read the request, not the ciphertext).
            try channel.pipeline.syncOperations.addHandler(connectionGuard.handler(), position: .last)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
