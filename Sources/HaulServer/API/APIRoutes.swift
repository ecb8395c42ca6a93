import Haul
import HaulAPI
import HaulCore
import Hummingbird
import Logging
import NIOCore
import NIOFoundationEssentialsCompat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/api/v1`: a thin layer over `DownloadManager`. Each handler parses, calls the manager once
/// (or once per id) and encodes; the queue's rules live in the manager, so aria2's JSON-RPC can
/// later sit beside this without repeating them.
struct APIRoutes<Context: RequestContext>: Sendable {
    let manager: DownloadManager
    let defaults: DaemonDefaults
    let settings: DownloadSettingsCache
    let logger: Logger

    func register(on api: RouterGroup<Context>) {
        api.get("downloads") { request, _ in try await list(request) }
        api.post("downloads") { request, _ in try await add(request) }
        api.get("downloads/:id") { _, context in try await view(try await manager.download(id(context))) }
        api.patch("downloads/:id") { request, context in try await change(request, id(context)) }
        api.put("downloads/:id") { request, context in try await change(request, id(context)) }
        api.delete("downloads/:id") { request, context in
            let id = try id(context)
            let deleteFile =
                request.uri.queryParameters.get("deleteFile").map { ["1", "true", "yes"].contains($0.lowercased()) }
                ?? false
            try await manager.remove(id, deleteFile: deleteFile)
            return try await view(try await manager.record(id))
        }
        api.post("downloads/:id/pause") { _, context in
            let id = try id(context)
            try await manager.pause(id)
            return try await view(try await manager.download(id))
        }
        api.post("downloads/:id/resume") { _, context in
            let id = try id(context)
            try await manager.resume(id)
            return try await view(try await manager.download(id))
        }
        api.put("downloads/:id/urls") { request, context in
            let id = try id(context)
            let urls = try await decode(URLsChange.self, request).remoteURLs()
            try await manager.setSources(urls, for: id)
            logger.info("download URLs changed", metadata: ["id": "\(id)", "urls": "\(urls.count)"])
            return try await view(try await manager.download(id))
        }
        api.post("downloads/:id/move") { request, context in
            let move = try await decode(MoveRequest.self, request)
            return APIResponse.download(DownloadView(try await manager.move(id(context), move.to), live: nil))
        }
        api.post("pause") { request, _ in
            let selection = try await decode(Selection.self, request)
            return try await apply(
                selection, all: { try await manager.pauseAll() }, each: { try await manager.pause($0) })
        }
        api.post("resume") { request, _ in
            let selection = try await decode(Selection.self, request)
            return try await apply(
                selection, all: { try await manager.resumeAll() }, each: { try await manager.resume($0) })
        }
        api.get("options") { _, _ in try await options() }
        api.put("options") { request, _ in try await setOptions(request) }
        api.patch("options") { request, _ in try await setOptions(request) }
        api.get("summary") { _, _ in try APIResponse.json(SummaryView(try await LiveRuns.summary(manager))) }
        api.get("events") { _, _ in EventStream.response(manager.events(), settings: settings) }
        api.get("groups") { request, _ in try await groups(request) }
    }

    /// `GET /groups`: the names of content added, oldest first, and whether each is complete;
    /// `?state=failed` (or `waiting`, `finished`, several separated by commas) only those.
    private func groups(_ request: Request) async throws -> Response {
        var states = Set(DownloadGroup.State.allCases)
        if let text = request.uri.queryParameters.get("state") {
            states = try Set(
                text.split(separator: ",").map { name in
                    guard let state = DownloadGroup.State(rawValue: String(name)) else {
                        let known = DownloadGroup.State.allCases.map(\.rawValue).joined(separator: ", ")
                        throw HaulError(.badRequest, "unknown state '\(name.prefix(40))' (one of: \(known))")
                    }
                    return state
                })
        }
        return try APIResponse.json(try await manager.groups().filter { states.contains($0.state) }.map(GroupView.init))
    }

    // MARK: Handlers

    /// `?status=running,queued` lists those statuses in that order, each in queue order (no
    /// status: every status but removed); `offset` and `limit` page the result, and
    /// `X-Total-Count` says how many matched before paging.
    private func list(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        var statuses: [DownloadStatus?] = [nil]
        if let text = query.get("status") {
            statuses = try text.split(separator: ",").map { name in
                guard let parsed = DownloadStatus(rawValue: String(name)) else {
                    let known = DownloadStatus.allCases.map(\.rawValue).joined(separator: ", ")
                    throw HaulError(.badRequest, "unknown status '\(name.prefix(40))' (one of: \(known))")
                }
                return parsed
            }
            if statuses.isEmpty {
                throw HaulError(.badRequest, "status: expected one or more statuses separated by commas")
            }
        }
        let offset = try Self.count(query.get("offset"), name: "offset") ?? 0
        let limit = try Self.count(query.get("limit"), name: "limit")
        var matching: [DownloadID] = []
        for status in statuses { matching += try await manager.ids(status: status) }
        let ids = Array(matching.dropFirst(offset).prefix(limit ?? Int.max))
        return listing(ids, total: matching.count)
    }

    private static func count(_ text: String?, name: String) throws(HaulError) -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw HaulError(.badRequest, "\(name) must be a whole number of 0 or more, not '\(text.prefix(40))'")
        }
        return value
    }

    private func listing(_ ids: [DownloadID], total: Int) -> Response {
        // Ids first, then records a page at a time straight into the response: the daemon's
        // memory does not grow with the length of the list.
        let manager = self.manager
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        headers[HTTPFields.Element.Name("X-Total-Count")!] = String(total)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                var first = true
                try await writer.write(ByteBuffer(string: "["))
                var start = 0
                repeat {
                    let page = Array(ids[start..<min(ids.count, start + 500)])
                    var json = JSONWriter()
                    let live = await LiveRuns.lookup(manager, page)
                    for record in try await manager.records(page) {
                        if !first { json.raw(",") }
                        first = false
                        live.view(record).write(to: &json)
                    }
                    try await writer.write(ByteBuffer(bytes: json.bytes))
                    start += page.count
                } while start < ids.count
                try await writer.write(ByteBuffer(string: "]\n"))
                try await writer.finish(nil)
            })
    }

    private func add(_ request: Request) async throws -> Response {
        let body = try await collect(request)
        let first = body.readableBytesView.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        // A key an add does not know is refused by name (`Checked`): a typo of `paused` started it.
        if first == UInt8(ascii: "[") {
            let adds = try JSONDecoder().decode([Checked<AddRequest>].self, from: body).map(\.value)
            guard !adds.isEmpty else { throw HaulError(.badRequest, "nothing to add: the array is empty") }
            var requests: [DownloadRequest] = []
            var placements: [AddPlacement] = []
            var groups: [DownloadQueue.GroupAsk] = []
            for (index, add) in adds.enumerated() {
                do {
                    let placement = try add.placement()
                    let added = try await defaults.addition(for: add)
                    if let group = added.group {
                        groups.append(.init(group, offsets: requests.count..<requests.count + added.requests.count))
                    }
                    requests += added.requests
                    placements += placement.spread(added.requests.count)
                } catch {
                    throw HaulError(error.code, "[\(index)]: \(error.message)", httpStatus: error.httpStatus)
                }
            }
            let records = try await manager.add(requests, placements: placements, groups: groups)
            return APIResponse.downloads(records.map { DownloadView($0, live: nil) }, status: .created)
        }
        guard first == UInt8(ascii: "{") else {
            throw HaulError(.badRequest, "expected a JSON object or an array of them")
        }
        let add = try JSONDecoder().decode(Checked<AddRequest>.self, from: body).value
        let placement = try add.placement()
        let added = try await defaults.addition(for: add)
        let requests = added.requests
        let records = try await manager.add(
            requests, placements: placement.spread(requests.count),
            groups: added.group.map { [.init($0, offsets: 0..<requests.count)] } ?? [])
        if requests.count != 1 || add.url != requests[0].url.absoluteString {
            // A name of content: every file it stands for, as an array of their downloads.
            return APIResponse.downloads(records.map { DownloadView($0, live: nil) }, status: .created)
        }
        return APIResponse.download(
            DownloadView(records[0], live: manager.liveProgress(records[0].id)), status: .created)
    }

    /// `{"all": true}` or `{"ids": [...]}`; the manager changes the ids all or none.
    private func apply(
        _ selection: Selection, all: () async throws -> Int, each: ([DownloadID]) async throws -> Int
    ) async throws -> Response {
        switch (selection.all, selection.ids) {
        case (true?, nil):
            return try APIResponse.json(CountView(count: try await all()))
        case (nil, let ids?), (false?, let ids?):
            let parsed = try ids.map { text throws(HaulError) in try DownloadID(parsing: text) }
            return try APIResponse.json(CountView(count: try await each(parsed)))
        default:
            throw HaulError(.badRequest, "expected {\"ids\": [...]} or {\"all\": true}")
        }
    }

    /// `PATCH /downloads/{id}`: `{"maxBytesPerSecond": N | null}`, stored and applied at once.
    private func change(_ request: Request, _ id: DownloadID) async throws -> Response {
        let change = try await decode(DownloadChange.self, request)
        guard let rate = change.maxBytesPerSecond else {
            throw HaulError(
                .badRequest, "expected {\"maxBytesPerSecond\": N} (bytes per second) or {\"maxBytesPerSecond\": null}")
        }
        try Limits.check(maxBytesPerSecond: rate)
        try await manager.setMaxBytesPerSecond(rate, for: id)
        await settings.forget(id)
        logger.info(
            "download rate limit changed",
            metadata: ["id": "\(id)", "maxBytesPerSecond": "\(rate.map(String.init) ?? "none")"])
        return try await view(try await manager.download(id))
    }

    private func options() async throws -> Response {
        try APIResponse.json(
            OptionsView(
                maxConcurrentDownloads: await manager.maxConcurrentDownloads, directory: defaults.directory,
                connections: defaults.connections, maxBytesPerSecond: manager.globalLimiter.rate?.bytesPerSecond,
                limitSchedule: defaults.limitSchedule?.description, sequential: defaults.sequential))
    }

    /// Every field is checked before any changes, so a bad one changes nothing.
    private func setOptions(_ request: Request) async throws -> Response {
        let change = try await decode(OptionsChange.self, request)
        try Limits.check(maxConcurrentDownloads: change.maxConcurrentDownloads)
        try Limits.check(connections: change.connections)
        if let rate = change.maxBytesPerSecond { try Limits.check(maxBytesPerSecond: rate) }
        if let count = change.maxConcurrentDownloads {
            await manager.setMaxConcurrentDownloads(count)
            logger.info("options changed", metadata: ["maxConcurrentDownloads": "\(count)"])
        }
        if let connections = change.connections {
            defaults.connections = connections
            logger.info("options changed", metadata: ["connections": "\(connections)"])
        }
        if let rate = change.maxBytesPerSecond {
            await manager.setMaxBytesPerSecond(rate)
            logger.info("options changed", metadata: ["maxBytesPerSecond": "\(rate.map(String.init) ?? "none")"])
        }
        if let sequential = change.sequential {
            defaults.sequential = sequential
            logger.info("options changed", metadata: ["sequential": "\(sequential)"])
        }
        return try await options()
    }

    // MARK: Helpers

    private func view(_ record: DownloadRecord?) async throws -> Response {
        guard let record else { throw HaulError(.notFound, "no such download") }
        return APIResponse.download(await LiveRuns.lookup(manager, [record.id]).view(record))
    }

    private func id(_ context: Context) throws -> DownloadID {
        try DownloadID(parsing: context.parameters.get("id") ?? "")
    }

    private func collect(_ request: Request) async throws -> ByteBuffer {
        try await request.body.collect(upTo: APILimits.maxBodySize)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body = try await collect(request)
        guard body.readableBytes > 0 else { throw HaulError(.badRequest, "expected a JSON body") }
        return try JSONDecoder().decode(type, from: body)
    }
}

enum APILimits {
    /// The largest request body: a batch of several thousand URLs fits.
    static let maxBodySize = 1 << 20
}
