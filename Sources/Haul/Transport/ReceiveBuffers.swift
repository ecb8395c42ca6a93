import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

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
/// 128 KiB) gets four reads per wake-up of up to 64 KiB (NIO's defaults), and the watcher
/// leaves its pipeline.
///
/// The first few fast connections of the process (`LargeReads`, four) get larger reads: 256 KiB,
/// or 128 KiB over TLS, where NIOSSL gathers a whole wake-up's plaintext into one buffer. On one
/// connection, 1 GiB over loopback, 64 KiB reads cost haul about 18,000 reads, each a hand-off to
/// the body's task; 256 KiB reads took the time from 0.93-1.13 s to 0.67-0.71 s and the CPU from
/// about 1.0 to 0.55 s (with `ProcessMemory.keepFreedBuffers`). Only a few: with 64 connections
/// over TLS all reading 256 KiB the peak RSS went from about 105 to 250 MiB, for no speed (the
/// link is shared). A connection gives its allowance back when it closes.
///
/// The other fast TLS connections read at most 16 KiB at a time (four per wake-up), not 64:
/// NIOSSL's plaintext buffer grows to hold a whole read and is copied at that size while the
/// last read's plaintext is still held. 1 GiB with 64 connections from nginx over TLS on
/// loopback into tmpfs, 3 interleaved runs: peak RSS 84-90 MB with 64 KiB reads, 62-67 MB with
/// 16 KiB; 1.20-1.36 s against 1.27-1.43 s, CPU 1.56-1.80 s against 1.70-1.80 s. With one or
/// eight connections (those with large reads) and through the latency relay (16 connections
/// at 4 MB/s, RTT 80 ms; one at 50 MB/s, RTT 120 ms) nothing measurable changed.
enum ReceiveBuffers {
    /// Reads per wake-up and their largest size until a connection shows it is fast.
    static let slowReads: UInt = 1
    static let slowReadSize = 16 << 10
    /// Reads per wake-up and their largest size on a fast connection (NIO's defaults).
    static let fastReads: UInt = 4
    static let fastReadSize = 64 << 10
    /// The largest read of a fast TLS connection without one of the `LargeReads`: NIOSSL decrypts
    /// a whole read into its plaintext buffer, which grows to hold it and is copied at that size
    /// when the previous read's plaintext is still held, so a read of one TLS record or so keeps
    /// each connection's buffers small.
    static let fastTLSReadSize = 16 << 10
    /// The largest read of a fast connection that holds one of the `LargeReads`.
    static let largeReadSize = 256 << 10
    static let largeTLSReadSize = 128 << 10

    /// Starts `channel` slow and watches its reads; call it on the channel's event loop, before
    /// the channel reads, after its TLS handler (if any) is in place.
    static func limit(_ channel: any Channel, logger: Logger, largeReads: LargeReads = .shared) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(ChannelOptions.maxMessagesPerRead, value: slowReads)
        try options.setOption(
            ChannelOptions.recvAllocator,
            value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: slowReadSize))
        let tls: Bool
        do {
            _ = try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
            tls = true
        } catch ChannelPipelineError.notFound {
            tls = false
        }
        let watcher = Watcher(
            logger: logger, largeReads: largeReads, sizes: tls ? .tls : .plain)
        try channel.pipeline.syncOperations.addHandler(watcher, position: .first)
    }

    /// A fast connection's largest read, with and without one of the `LargeReads`.
    struct FastSizes: Equatable {
        var fast: Int
        var large: Int

        static let plain = FastSizes(fast: fastReadSize, large: largeReadSize)
        static let tls = FastSizes(fast: fastTLSReadSize, large: largeTLSReadSize)
    }

    /// How many connections of the process may read more than `fastReadSize` at once.
    final class LargeReads: Sendable {
        static let shared = LargeReads(limit: 4)

        let limit: Int
        private let held = NIOLockedValueBox(0)

        init(limit: Int) {
            self.limit = limit
        }

        /// Takes one if one is left.
        func take() -> Bool {
            held.withLockedValue { held in
                guard held < limit else { return false }
                held += 1
                return true
            }
        }

        func give() {
            held.withLockedValue { $0 -= 1 }
        }

        var inUse: Int { held.withLockedValue { $0 } }
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
        private let largeReads: LargeReads
        private let sizes: FastSizes

        init(logger: Logger, largeReads: LargeReads, sizes: FastSizes) {
            self.logger = logger
            self.largeReads = largeReads
            self.sizes = sizes
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let fast = pace.read(unwrapInboundIn(data).readableBytes)
            context.fireChannelRead(data)
            guard fast else { return }
            var size = sizes.fast
            if largeReads.take() {
                size = sizes.large
                context.channel.closeFuture.whenComplete { [largeReads] _ in largeReads.give() }
            }
            do {
                let options = context.channel.syncOptions
                try options?.setOption(ChannelOptions.maxMessagesPerRead, value: ReceiveBuffers.fastReads)
                try options?.setOption(
                    ChannelOptions.recvAllocator,
                    value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: size, maximum: size))
            } catch {
                // The connection goes on at one read per wake-up.
                logger.warning("cannot let a fast connection read more per wake-up", metadata: ["error": "\(error)"])
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
