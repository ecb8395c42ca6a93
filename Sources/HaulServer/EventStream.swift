import Foundation
import Haul
import HaulCore
import HaulAPI
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /api/v1/events`: the manager's events as Server-Sent Events. The response ends when the
/// client goes away (its write fails) or the manager shuts down (its event stream finishes),
/// which is what lets the daemon stop within its deadline while pages are open.
enum EventStream {
    static let pingInterval: Duration = .seconds(15)

    static func response(_ events: AsyncStream<DownloadEvent>, settings: DownloadSettingsCache) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingNewest(4096))
            let forward = Task {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for await event in events {
                    let view = await settings.annotate(EventView(event), id: event.id)
                    guard let data = try? encoder.encode(view) else { continue }
                    var buffer = ByteBuffer(string: "event: \(view.type.rawValue)\ndata: ")
                    buffer.writeBytes(data)
                    buffer.writeString("\n\n")
                    continuation.yield(buffer)
                }
                continuation.finish()
            }
            let ping = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: pingInterval)
                    continuation.yield(ByteBuffer(string: ": ping\n\n"))
                }
            }
            defer {
                forward.cancel()
                ping.cancel()
            }
            try await writer.write(ByteBuffer(string: ": connected\n\n"))
            // The server stops first on SIGTERM and waits for open responses: this one ends then.
            try await withGracefulShutdownHandler {
                for await chunk in chunks {
                    try await writer.write(chunk)
                }
            } onGracefulShutdown: {
                continuation.finish()
            }
            try await writer.finish(nil)
        })
    }
}
