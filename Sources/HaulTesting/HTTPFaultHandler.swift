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
    /// Throttled bodies are written on a timer with this period, `rate * period` bytes a tick.
    private static let tickInterval = TimeAmount.milliseconds(10)
    /// How far a throttled body may catch up after late ticks (or a client that stopped
    /// reading) before the lost time is forgiven, so a stalled reader gets no long burst.
    private static let maxCatchUpSeconds = 0.2

    /// A payload body being streamed.
    private struct Transfer {
        /// The response's id in the server's log.
        var response: Int
        var payload: Payload
        var next: Int64
        var end: Int64
        var ending: ResponsePlan.Ending
        var keepAlive: Bool
        /// Throttled bodies: what may be written now (`ThrottleCredit`), and when it last earned.
        var throttle: ThrottleCredit?
        var lastTick = NIODeadline.now()
        /// Completes when the last thing written so far has been handed to the kernel.
        var lastWrite: EventLoopFuture<Void>

        var remaining: Int64 { end - next }
    }

    private let state: ServerState
    /// The server-wide serial number of this connection.
    private let connection: Int
    /// The payload response on this connection that counts as in flight (see ``ConnectionCap``),
    /// from its head until its body is in the kernel or, for drops and stalls, the connection
    /// closes.
    private var inFlightResponse: Int?
    private var requestHead: HTTPRequestHead?
    private var transfer: Transfer?
    private var isPumping = false
    private var tick: Scheduled<Void>?
    /// The transfer's body waits behind a closed ``BodyGate``.
    private var gated = false
    /// Reads nothing more and never closes (``Fault/holdAfter(_:)``).
    private var holding = false
    /// The current request's place in the server's log, where its body goes.
    private var recordIndex: Int?

    init(state: ServerState) {
        self.state = state
        self.connection = state.openConnection()
    }

    // MARK: - Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
            // Recorded as soon as the head arrives, so it is visible even if answering stalls.
            recordIndex = state.record(
                RecordedRequest(
                    method: head.method.rawValue,
                    path: Self.path(of: head.uri),
                    uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) }
                ),
                connection: connection
            )
        case .body(let buffer):
            if let recordIndex { state.appendBody(Array(buffer.readableBytesView), toRequest: recordIndex) }
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            respond(to: head, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !gated, let transfer, transfer.throttle == nil {
            pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        transfer = nil
        if let response = inFlightResponse {
            inFlightResponse = nil
            state.endResponse(response)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Typically the client went away mid-body; there is nobody left to answer.
        context.close(promise: nil)
    }

    // MARK: - Responding

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = Self.path(of: request.uri)
        let decided = state.respond(
            method: request.method,
            requestHeaders: request.headers,
            path: path,
            connection: connection
        )
        var plan = decided.plan
        let response = decided.id
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
        if plan.ending == .hold, !holding {
            // From here on the socket is not read: whatever the client sends stays unread.
            do {
                guard let options = context.channel.syncOptions else { throw ChannelError.operationUnsupported }
                try options.setOption(ChannelOptions.autoRead, value: false)
            } catch {
                // The fault cannot be played: the connection breaks instead, for the test to see.
                context.close(promise: nil)
                return
            }
            holding = true
            state.hold()
        }
        var lastWrite = context.write(wrapOutboundOut(.head(head)))

        switch plan.body {
        case .none:
            finish(ending: plan.ending, keepAlive: keepAlive, lastWrite: lastWrite, response: nil, context: context)
        case .text(let text):
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            lastWrite = context.write(wrapOutboundOut(.body(.byteBuffer(buffer))))
            finish(ending: plan.ending, keepAlive: keepAlive, lastWrite: lastWrite, response: nil, context: context)
        case .raw(let bytes):
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            lastWrite = context.write(wrapOutboundOut(.body(.byteBuffer(buffer))))
            finish(ending: plan.ending, keepAlive: keepAlive, lastWrite: lastWrite, response: nil, context: context)
        case .payload(let payload, let range):
            let end = plan.bodyLimit.map { min(range.upperBound, range.lowerBound + $0) } ?? range.upperBound
            inFlightResponse = response
            transfer = Transfer(
                response: response,
                payload: payload,
                next: range.lowerBound,
                end: end,
                ending: plan.ending,
                keepAlive: keepAlive,
                throttle: plan.throttle.map {
                    ThrottleCredit(rate: $0, tick: Self.tickInterval.seconds, maxCatchUp: Self.maxCatchUpSeconds)
                },
                lastWrite: lastWrite
            )
            if let gate = state.closedGate(for: path) {
                context.flush()
                gated = true
                waitForGate(path: path, deadline: .now() + TimeAmount(gate.atMost), context: context)
            } else {
                startBody(context: context)
            }
        }
    }

    private func startBody(context: ChannelHandlerContext) {
        gated = false
        guard transfer != nil else { return }
        if transfer?.throttle != nil {
            transfer?.lastTick = .now()
            throttledTick(context: context)
        } else {
            pump(context: context)
        }
    }

    /// A body behind a closed ``BodyGate``: looks again every tick (a closed connection cancels
    /// the timer, as it does a throttled body's).
    private func waitForGate(path: String, deadline: NIODeadline, context: ChannelHandlerContext) {
        tick = context.eventLoop.assumeIsolated().scheduleTask(deadline: .now() + Self.tickInterval) { [self] in
            self.tick = nil
            if self.state.closedGate(for: path) == nil || NIODeadline.now() >= deadline {
                self.startBody(context: context)
            } else {
                self.waitForGate(path: path, deadline: deadline, context: context)
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

    /// Throttled bodies: every tick, write what the rate has earned since the last one.
    private func throttledTick(context: ChannelHandlerContext) {
        tick = nil
        guard var transfer, transfer.throttle != nil else { return }
        let now = NIODeadline.now()
        transfer.throttle?.earn((now - transfer.lastTick).seconds)
        transfer.lastTick = now
        self.transfer = transfer

        var wrote = false
        while context.channel.isWritable, let current = self.transfer, current.remaining > 0,
            let available = current.throttle?.available, available >= 1
        {
            let count = writeChunk(size: min(available, Self.chunkSize), context: context)
            self.transfer?.throttle?.spend(count)
            wrote = true
        }
        if wrote {
            context.flush()
        }
        guard let current = self.transfer else { return }
        if current.remaining == 0 {
            completeTransfer(context: context)
        } else {
            tick = context.eventLoop.assumeIsolated().scheduleTask(deadline: now + Self.tickInterval) { [self] in
                self.throttledTick(context: context)
            }
        }
    }

    @discardableResult
    private func writeChunk(size: Int64, context: ChannelHandlerContext) -> Int64 {
        guard var transfer else { return 0 }
        let count = min(size, transfer.remaining)
        var buffer = context.channel.allocator.buffer(capacity: Int(count))
        transfer.payload.write(transfer.next..<(transfer.next + count), into: &buffer)
        transfer.next += count

        let written = context.write(wrapOutboundOut(.body(.byteBuffer(buffer))))
        let state = self.state
        let response = transfer.response
        written.whenSuccess { state.addBodyBytes(count, response: response) }
        transfer.lastWrite = written
        self.transfer = transfer
        return count
    }

    private func completeTransfer(context: ChannelHandlerContext) {
        guard let transfer else { return }
        self.transfer = nil
        finish(
            ending: transfer.ending,
            keepAlive: transfer.keepAlive,
            lastWrite: transfer.lastWrite,
            response: transfer.response,
            context: context
        )
    }

    private func finish(
        ending: ResponsePlan.Ending,
        keepAlive: Bool,
        lastWrite: EventLoopFuture<Void>,
        response: Int?,
        context: ChannelHandlerContext
    ) {
        switch ending {
        case .complete:
            let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if let response {
                // In flight until the body has reached the kernel: a client that has read it all
                // and asks again (on any connection) must not be refused for this response.
                if inFlightResponse == response {
                    inFlightResponse = nil
                }
                let state = self.state
                ended.whenComplete { _ in state.endResponse(response) }
            }
            if !keepAlive {
                ended.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            }
        case .close:
            // Counts as in flight until the connection has closed (`channelInactive`).
            // Closing while writes are still queued would discard them, so wait until the last
            // byte has reached the kernel; the close then sends a FIN after it.
            context.flush()
            lastWrite.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .stall, .hold:
            // Counts as in flight until the connection closes, which may be never.
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

extension TimeAmount {
    fileprivate var seconds: Double {
        Double(nanoseconds) / 1_000_000_000
    }

    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
