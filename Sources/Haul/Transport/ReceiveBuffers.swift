import Logging
import NIOCore

/// How many receive buffers a connection to a server keeps, and how large they grow.
///
/// NIO keeps a pool of receive buffers per channel, as many as `maxMessagesPerRead` (4 by
/// default), each grown to the largest read so far (64 KiB at most) and never shrunk: a buffer
/// still held downstream when the next read comes makes the channel allocate and keep another.
/// A download's body chunks are held until their batch is written, so every connection ended up
/// keeping four 64 KiB buffers: with a thousand slow downloads, 256 MiB of the daemon's 400 MiB
/// (heaptrack: `NIOPooledRecvBufferAllocator`). With one read per wake-up, one buffer of 64 KiB
/// each was still 65 MiB: a server throttled to 64 KiB/s sends its first second at once, which
/// grows the buffer to the largest size.
///
/// So a connection starts slow: one read per wake-up (one buffer kept) of at most 16 KiB. That
/// would cost a fast connection a fifth of its speed with 64 KiB reads (1 GiB over loopback into
/// tmpfs: 0.59-0.70 s with four reads per wake-up, 0.75-0.86 s with one) and half with 16 KiB
/// ones (1.2-1.5 s), so a connection that shows it is fast (`Pace`: eight full reads in a row,
/// 128 KiB) gets NIO's defaults, four reads of up to 64 KiB, and the watcher leaves its pipeline.
enum ReceiveBuffers {
    /// Reads per wake-up and their largest size until a connection shows it is fast.
    static let slowReads: UInt = 1
    static let slowReadSize = 16 << 10
    /// Reads per wake-up and their largest size on a fast connection (NIO's defaults).
    static let fastReads: UInt = 4
    static let fastReadSize = 64 << 10

    /// Starts `channel` slow and watches its reads; call it on the channel's event loop, before
    /// the channel reads.
    static func limit(_ channel: any Channel, logger: Logger) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(ChannelOptions.maxMessagesPerRead, value: slowReads)
        try options.setOption(ChannelOptions.recvAllocator,
                              value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: slowReadSize))
        try channel.pipeline.syncOperations.addHandler(Watcher(logger: logger), position: .first)
    }

    /// Whether a connection's reads show it is fast: `fullReads` full reads in a row (a server
    /// throttled to 64 KiB/s still sends its first second at once: four such reads, not eight).
    struct Pace {
        static let fullRead = ReceiveBuffers.slowReadSize
        static let fullReads = 8

        private(set) var inARow = 0

        /// Notes one read; true once the connection has shown it is fast.
        mutating func read(_ bytes: Int) -> Bool {
            inARow = bytes >= Self.fullRead ? inARow + 1 : 0
            return inARow >= Self.fullReads
        }
    }

    /// Sees the raw reads (first in the pipeline, before TLS) until the connection is fast, then
    /// gives it the fast reads and removes itself.
    final class Watcher: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer

        private var pace = Pace()
        private let logger: Logger

        init(logger: Logger) {
            self.logger = logger
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let fast = pace.read(unwrapInboundIn(data).readableBytes)
            context.fireChannelRead(data)
            guard fast else { return }
            do {
                let options = context.channel.syncOptions
                try options?.setOption(ChannelOptions.maxMessagesPerRead, value: ReceiveBuffers.fastReads)
                try options?.setOption(ChannelOptions.recvAllocator,
                                       value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: ReceiveBuffers.fastReadSize,
                                                                              maximum: ReceiveBuffers.fastReadSize))
            } catch {
                // The connection goes on at one read per wake-up.
                logger.warning("cannot let a fast connection read more per wake-up", metadata: ["error": "\(error)"])
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
