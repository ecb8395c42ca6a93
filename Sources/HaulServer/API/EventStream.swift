import Haul
import HaulAPI
import HaulCore
import Hummingbird
import NIOCore
import ServiceLifecycle

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /api/v1/events`: the manager's events as Server-Sent Events. The response ends when the
/// client goes away (its write fails) or the manager shuts down (its event stream finishes),
/// which is what lets the daemon stop within its deadline while pages are open.
enum EventStream {
    static let pingInterval: Duration = .seconds(15)

    static func response(_ events: AsyncStream<DownloadEvent>, settings: DownloadSettingsCache) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // The events and the pings go through one stream to the one writer, fed by two child
                // tasks of one group: both end when the writing ends, however it ends.
                let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingNewest(4096))
                try await writer.write(ByteBuffer(string: ": connected\n\n"))
                // The server stops first on SIGTERM and waits for open responses: this one ends then.
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            let encoder = JSONEncoder()
                            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                            for await event in events {
                                continuation.yield(await chunk(for: event, settings: settings, encoder: encoder))
                            }
                            continuation.finish()
                        }
                        group.addTask {
                            while true {
                                do {
                                    try await Task.sleep(for: pingInterval)
                                } catch {
                                    return // cancelled: the response has ended
                                }
                                continuation.yield(ByteBuffer(string: ": ping\n\n"))
                            }
                        }
                        defer { group.cancelAll() }
                        for await chunk in chunks {
                            try await writer.write(chunk)
                        }
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try await writer.finish(nil)
            })
    }

    /// One event as SSE. An event that cannot be encoded is said in a comment (which clients
    /// skip), so that the stream shows what it did not send.
    static func chunk(for event: DownloadEvent, settings: DownloadSettingsCache, encoder: JSONEncoder) async
        -> ByteBuffer
    {
        let view = await settings.annotate(EventView(event), id: event.id)
        do {
            let data = try encoder.encode(view)
            var buffer = ByteBuffer(string: "event: \(view.type.rawValue)\ndata: ")
            buffer.writeBytes(data)
            buffer.writeString("\n\n")
            return buffer
        } catch {
            return ByteBuffer(
                string:
                    """
                    : \(view.type.rawValue) event of \(event.id) not sent: \
                    \(String(describing: error).replacing("\n", with: " "))\n\n
                    """
            )
        }
    }
}
