import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import Haul

/// A connection starts with one receive buffer of at most 16 KiB and gets four reads of 64 KiB
/// once it shows it is fast, or of 256 KiB while it holds one of the process's large reads
/// (`ReceiveBuffers`), over real loopback sockets.
@Suite(.timeLimit(.minutes(1))) struct ReceiveBuffersTests {
    @Test func eightFullReadsInARowMakeAConnectionFast() {
        var pace = ReceiveBuffers.Pace()
        let full = ReceiveBuffers.Pace.fullRead
        // A throttled server's first second (64 KiB) at once, then its trickle: never fast.
        var fast: [Bool] = []
        for bytes in [full, full, full, full, 1_400, 4_096, full, 900] + Array(repeating: 2_048, count: 50) {
            fast.append(pace.read(bytes))
        }
        #expect(!fast.contains(true))
        fast = (0..<ReceiveBuffers.Pace.fullReads).map { _ in pace.read(full) }
        #expect(fast == Array(repeating: false, count: ReceiveBuffers.Pace.fullReads - 1) + [true])
    }

    @Test func aFastConnectionGetsFourReadsOfUpTo64KiB() async throws {
        // None of the process's large reads left.
        let (options, watching) = try await readAll(4 << 20, largeReads: ReceiveBuffers.LargeReads(limit: 0))
        #expect(options.reads == ReceiveBuffers.fastReads)
        #expect(options.largest == ReceiveBuffers.fastReadSize)
        #expect(!watching)
    }

    @Test func aFastConnectionHoldingALargeReadReadsUpTo256KiBAndGivesItBackWhenClosed() async throws {
        let largeReads = ReceiveBuffers.LargeReads(limit: 1)
        let (options, watching) = try await readAll(4 << 20, largeReads: largeReads)
        #expect(options.reads == ReceiveBuffers.fastReads)
        #expect(options.largest == ReceiveBuffers.largeReadSize)
        #expect(!watching)
        #expect(largeReads.inUse == 0)
    }

    @Test func largeReadsAreHandedOutUpToTheirLimit() {
        let largeReads = ReceiveBuffers.LargeReads(limit: 2)
        #expect([largeReads.take(), largeReads.take(), largeReads.take()] == [true, true, false])
        largeReads.give()
        #expect(largeReads.take())
        #expect(largeReads.inUse == 2)
    }

    @Test func aBurstShorterThanEightFullReadsLeavesItSlow() async throws {
        // A throttled server's first second at once and then some: however the bytes arrive,
        // fewer than eight full reads.
        let largeReads = ReceiveBuffers.LargeReads(limit: 1)
        let (options, watching) = try await readAll(
            ReceiveBuffers.Pace.fullReads * ReceiveBuffers.Pace.fullRead - 1,
            largeReads: largeReads)
        #expect(options.reads == ReceiveBuffers.slowReads)
        #expect(options.largest == ReceiveBuffers.slowReadSize)
        #expect(watching)
        #expect(largeReads.inUse == 0)
    }

    /// Sends `count` bytes at once to a client channel set up by `ReceiveBuffers.limit`; returns
    /// the client's options and whether the watcher is still in its pipeline once all came; the
    /// client is closed when it returns.
    ///
    /// The client reads only once the first `queued` bytes (all of them, or 512 KiB) wait in its
    /// socket's receive buffer (made 1 MiB), so its first reads are full however the machine
    /// schedules the two ends: on a loaded machine a reader woken for every segment would
    /// otherwise see short reads that no server sends.
    private func readAll(_ count: Int, largeReads: ReceiveBuffers.LargeReads) async throws -> (
        (reads: UInt, largest: Int), Bool
    ) {
        let group = MultiThreadedEventLoopGroup.singleton
        let queued = min(count, 512 << 10)
        let (queuedSent, sent) = AsyncStream.makeStream(of: Bool.self)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Sender(count: count, queued: queued, sent: sent))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let (received, arrived) = AsyncStream.makeStream(of: Int.self)
        let client = try await ClientBootstrap(group: group)
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.so_rcvbuf), value: 1 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try ReceiveBuffers.limit(channel, logger: Logger(label: "test"), largeReads: largeReads)
                    try channel.pipeline.syncOperations.addHandler(Counter(arrived: arrived))
                }
            }
            .connect(to: try #require(server.localAddress)).get()
        var sending = queuedSent.makeAsyncIterator()
        #expect(await sending.next() == true, "the server's bytes never left it")
        try await client.setOption(.autoRead, value: true).get()
        var total = 0
        for await bytes in received {
            total += bytes
            if total >= count { break }
        }
        let result = try await client.eventLoop.submit {
            let options = try #require(client.syncOptions)
            let reads = try options.getOption(ChannelOptions.maxMessagesPerRead)
            let allocator = try #require(
                try options.getOption(ChannelOptions.recvAllocator) as? AdaptiveRecvByteBufferAllocator)
            let watching: Bool
            do {
                _ = try client.pipeline.syncOperations.context(handlerType: ReceiveBuffers.Watcher.self)
                watching = true
            } catch ChannelPipelineError.notFound {
                watching = false
            }
            return ((reads, allocator.maximum), watching)
        }.get()
        try await client.close()
        // Its callbacks, the large read given back among them, ran before this one.
        try await client.closeFuture.get()
        try await server.close()
        return result
    }

    /// Sends its bytes at once when the connection is up, the first `queued` as a write of their
    /// own: its promise is kept once the kernel has taken all of them (then `sent` is told true;
    /// false if the write failed).
    private final class Sender: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let count: Int
        let queued: Int
        let sent: AsyncStream<Bool>.Continuation
        init(count: Int, queued: Int, sent: AsyncStream<Bool>.Continuation) {
            (self.count, self.queued, self.sent) = (count, queued, sent)
        }

        func channelActive(context: ChannelHandlerContext) {
            let first = context.eventLoop.makePromise(of: Void.self)
            first.futureResult.whenComplete { [sent] result in
                if case .success = result { sent.yield(true) } else { sent.yield(false) }
                sent.finish()
            }
            context.write(NIOAny(ByteBuffer(repeating: 7, count: queued)), promise: first)
            if count > queued {
                context.write(NIOAny(ByteBuffer(repeating: 7, count: count - queued)), promise: nil)
            }
            context.flush()
        }
    }

    /// Tells how many bytes reach the end of the client's pipeline.
    private final class Counter: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        private let arrived: AsyncStream<Int>.Continuation
        init(arrived: AsyncStream<Int>.Continuation) { self.arrived = arrived }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            arrived.yield(unwrapInboundIn(data).readableBytes)
        }
    }
}
