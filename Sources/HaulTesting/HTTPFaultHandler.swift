import NIOCore
import NIOHTTP1

/// Answers the requests on one connection according to the routes and their faults.
///
/// Sits after NIO's HTTP server pipeline (decoder, encoder, pipelining assistance), so it sees
/// one request at a time and keep-alive works. Bodies are streamed in chunks generated on demand
/// and written only while the channel is writable (or on a timer when throttled), so memory stays
/// flat whatever the payload size and however slowly the client reads.
final class HTTPFaultHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Unthrottled chunk size: large enough to be fast, small enough to keep memory flat.
    private static let chunkSize: Int64 = 64 * 1024

    /// A payload body being streamed.
    private struct Transfer {
        var path: String
        var payload: Payload
        var next: Int64
        var end: Int64
        var ending: ResponsePlan.Ending
        var keepAlive: Bool
        var throttle: Int?
        /// Completes when the last thing written so far has been handed to the kernel.
        var lastWrite: EventLoopFuture<Void>

        var remaining: Int64 { end - next }
    }

    private let state: ServerState
    private var requestHead: HTTPRequestHead?
    private var transfer: Transfer?
    private var isPumping = false
    private var tick: Scheduled<Void>?

    init(state: ServerState) {
        self.state = state
    }

    // MARK: - Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
            // Recorded as soon as the head arrives, so it is visible even if answering stalls.
            state.record(
                RecordedRequest(
                    method: head.method.rawValue,
                    path: Self.path(of: head.uri),
                    uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) }
                )
            )
        case .body:
            break
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            respond(to: head, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let transfer, transfer.throttle == nil {
            pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        transfer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Typically the client went away mid-body; there is nobody left to answer.
        context.close(promise: nil)
    }

    // MARK: - Responding

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = Self.path(of: request.uri)
        var plan = ResponsePlan(
            method: request.method,
            requestHeaders: request.headers,
            decision: state.decide(for: path)
        )
        var keepAlive = request.isKeepAlive
        if request.version == .http1_0 && plan.headers.first(name: "Transfer-Encoding") == "chunked" {
            // HTTP/1.0 has no chunked coding: delimit the body by closing the connection instead.
            plan.headers.remove(name: "Transfer-Encoding")
            keepAlive = false
        }
        if !keepAlive {
            plan.headers.replaceOrAdd(name: "Connection", value: "close")
        }
        let head = HTTPResponseHead(version: .http1_1, status: plan.status, headers: plan.headers)
        var lastWrite = context.write(wrapOutboundOut(.head(head)))

        switch plan.body {
        case .none:
            finish(ending: plan.ending, keepAlive: keepAlive, lastWrite: lastWrite, context: context)
        case .text(let text):
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            lastWrite = context.write(wrapOutboundOut(.body(.byteBuffer(buffer))))
            finish(ending: plan.ending, keepAlive: keepAlive, lastWrite: lastWrite, context: context)
        case .payload(let payload, let range):
            let end = plan.bodyLimit.map { min(range.upperBound, range.lowerBound + $0) } ?? range.upperBound
            transfer = Transfer(
                path: path,
                payload: payload,
                next: range.lowerBound,
                end: end,
                ending: plan.ending,
                keepAlive: keepAlive,
                throttle: plan.throttle,
                lastWrite: lastWrite
            )
            if plan.throttle != nil {
                throttledTick(context: context)
            } else {
                pump(context: context)
            }
        }
    }

    /// Writes chunks while the channel is writable; resumes from `channelWritabilityChanged`,
    /// or on the next loop iteration so one fast client cannot monopolise the event loop.
    private func pump(context: ChannelHandlerContext) {
        guard !isPumping else { return }
        isPumping = true
        while context.channel.isWritable, let transfer, transfer.remaining > 0 {
            writeChunk(size: Self.chunkSize, context: context)
        }
        context.flush()
        isPumping = false

        guard let transfer else { return }
        if transfer.remaining == 0 {
            completeTransfer(context: context)
        } else if context.channel.isWritable {
            context.eventLoop.assumeIsolated().execute { [self] in
                if self.transfer != nil {
                    self.pump(context: context)
                }
            }
        }
    }

    /// Throttled bodies: one small chunk per tick, with ticks spaced to give the configured rate.
    private func throttledTick(context: ChannelHandlerContext) {
        tick = nil
        guard let transfer, let throttle = transfer.throttle else { return }
        let chunk = Int64(max(1, throttle / 10))
        if context.channel.isWritable && transfer.remaining > 0 {
            writeChunk(size: chunk, context: context)
            context.flush()
        }
        guard let current = self.transfer else { return }
        if current.remaining == 0 {
            completeTransfer(context: context)
        } else {
            let interval = TimeAmount.nanoseconds(chunk * 1_000_000_000 / Int64(throttle))
            tick = context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
                self.throttledTick(context: context)
            }
        }
    }

    private func writeChunk(size: Int64, context: ChannelHandlerContext) {
        guard var transfer else { return }
        let count = min(size, transfer.remaining)
        var buffer = context.channel.allocator.buffer(capacity: Int(count))
        transfer.payload.write(transfer.next..<(transfer.next + count), into: &buffer)
        transfer.next += count

        let written = context.write(wrapOutboundOut(.body(.byteBuffer(buffer))))
        let state = self.state
        let path = transfer.path
        written.whenSuccess { state.addBodyBytes(count, to: path) }
        transfer.lastWrite = written
        self.transfer = transfer
    }

    private func completeTransfer(context: ChannelHandlerContext) {
        guard let transfer else { return }
        self.transfer = nil
        finish(ending: transfer.ending, keepAlive: transfer.keepAlive, lastWrite: transfer.lastWrite, context: context)
    }

    private func finish(
        ending: ResponsePlan.Ending,
        keepAlive: Bool,
        lastWrite: EventLoopFuture<Void>,
        context: ChannelHandlerContext
    ) {
        switch ending {
        case .complete:
            let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            }
        case .close:
            // Closing while writes are still queued would discard them, so wait until the last
            // byte has reached the kernel; the close then sends a FIN after it.
            context.flush()
            lastWrite.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .stall:
            context.flush()
        }
    }

    private static func path(of uri: String) -> String {
        if let query = uri.firstIndex(of: "?") {
            return String(uri[..<query])
        }
        return uri
    }
}
