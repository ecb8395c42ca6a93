import Haul
import HaulAPI
import HaulCore
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `aria2.*` methods. Each parses its parameters, calls the manager and writes aria2's shape;
/// a state aria2 refuses (pausing a paused download) gets aria2's message.
extension Aria2RPC {
    func aria2(_ method: String, _ params: Params, into json: inout JSONWriter) async throws {
        switch method {
        case "addUri": json.string(try await addUri(params).rawValue)
        case "remove", "forceRemove":
            let id = try params.gid(0)
            let record = try await record(id)
            guard !record.status.isTerminal else {
                throw Aria2Error(code: 1, message: "Active Download not found for GID#\(id)")
            }
            try await manager.remove(id, deleteFile: false)
            json.string(id.rawValue)
        case "pause", "forcePause":
            let id = try params.gid(0)
            let record = try await record(id)
            guard record.status == .queued || record.status == .running else {
                throw Aria2Error(code: 1, message: "GID#\(id) cannot be paused now")
            }
            try await manager.pause(id)
            json.string(id.rawValue)
        case "unpause":
            let id = try params.gid(0)
            guard try await record(id).status == .paused else {
                throw Aria2Error(code: 1, message: "GID#\(id) cannot be unpaused now")
            }
            try await manager.resume(id)
            json.string(id.rawValue)
        case "pauseAll", "forcePauseAll":
            try await manager.pauseAll()
            json.string("OK")
        case "unpauseAll":
            try await manager.resumeAll()
            json.string("OK")
        case "tellStatus":
            let id = try params.gid(0)
            let keys = try params.keys(1)
            status(try await record(id), live: await LiveRuns.lookup(manager, [id]).progress(id)).write(
                to: &json, keys: keys)
        case "getUris":
            let id = try params.gid(0)
            let record = try await record(id)
            guard !record.status.isTerminal else {
                throw Aria2Error(code: 1, message: "No URI data is available for GID#\(id)")
            }
            let status = Aria2Status(record, live: nil)
            json.array(record.request.sources) { json, url in status.writeURI(url, to: &json) }
        case "getFiles":
            let id = try params.gid(0)
            let status = Aria2Status(try await record(id), live: manager.liveProgress(id))
            json.array([status]) { json, status in status.writeFile(to: &json) }
        case "getServers":
            let id = try params.gid(0)
            let record = try await record(id)
            guard record.status == .running else {
                throw Aria2Error(code: 1, message: "No active download for GID#\(id)")
            }
            Aria2Status(record, live: manager.liveProgress(id)).writeServers(to: &json)
        case "tellActive":
            let keys = try params.keys(0)
            try await writeStatuses(try await manager.ids(status: .running), keys: keys, into: &json)
        case "tellWaiting":
            let (offset, count, keys) = (try params.integer(0), try params.integer(1), try params.keys(2))
            try await writeStatuses(
                Self.window(try await manager.waitingIDs(), offset: offset, count: count), keys: keys, into: &json)
        case "tellStopped":
            let (offset, count, keys) = (try params.integer(0), try params.integer(1), try params.keys(2))
            try await writeStatuses(
                Self.window(try await stopped(), offset: offset, count: count), keys: keys, into: &json)
        case "changePosition":
            json.raw(String(try await changePosition(params)))
        case "changeOption":
            try await changeOption(params)
            json.string("OK")
        case "getOption":
            let id = try params.gid(0)
            Aria2Options.write(try await record(id), to: &json)
        case "changeGlobalOption":
            try await changeGlobalOption(try params.object(0))
            json.string("OK")
        case "getGlobalOption":
            Aria2Options.writeGlobal(
                defaults: defaults, maxConcurrent: await manager.maxConcurrentDownloads,
                overall: manager.globalLimiter.rate?.bytesPerSecond, to: &json)
        case "getGlobalStat":
            try await globalStat(into: &json)
        case "purgeDownloadResult":
            try await manager.forgetFinished()
            json.string("OK")
        case "removeDownloadResult":
            let id = try params.gid(0)
            _ = try await record(id)
            do {
                try await manager.forget(id)
            } catch let error as HaulError where error.code == .conflict {
                throw Aria2Error(code: 1, message: "Could not remove download result of GID#\(id)")
            }
            json.string("OK")
        case "getVersion":
            json.object { json in
                json.field("enabledFeatures") { json in json.bytes += Self.strings(["HTTPS", "Message Digest"]) }
                json.field("version", HaulVersion.current)
            }
        case "getSessionInfo":
            json.object { $0.field("sessionId", sessionID) }
        case "saveSession":
            // Every change is in the store the moment it is made: there is nothing left to save.
            json.string("OK")
        case "shutdown", "forceShutdown":
            logger.info("shutdown requested over JSON-RPC")
            shutdown()
            json.string("OK")
        case "changeUri":
            let (deleted, added) = try await changeUri(params)
            json.array([deleted, added]) { json, count in json.number(Double(count)) }
        case "addMetalink":
            let ids = try await addMetalink(params)
            json.array(ids) { json, id in json.string(id.rawValue) }
        case "addTorrent", "getPeers":
            throw Aria2Error(
                code: 1, message: "haul downloads over HTTP and HTTPS only: aria2.\(method) is not supported")
        default:
            throw Aria2Error(code: 1, message: "No such method: aria2.\(method)")
        }
    }

    // MARK: Methods with more to them (those that add downloads are in `+Adding`)

    /// `changeUri(gid, fileIndex, delUris, addUris[, position])`: removes each of `delUris` once,
    /// then inserts `addUris` at `position` (after the removal; default: the end). Returns how
    /// many were removed and added. The download keeps its bytes when its new first URL serves
    /// the same file (`DownloadManager.setSources`).
    private func changeUri(_ params: Params) async throws -> (Int, Int) {
        let id = try params.gid(0)
        guard try params.integer(1) == 1 else {
            throw Aria2Error(code: 1, message: "The given file index is out of range.")
        }
        let removing = try params.array(2).map { value in
            guard let text = value.string else { throw params.wrongType(2) }
            return text
        }
        let adding = try params.array(3).map { value in
            guard let text = value.string else { throw params.wrongType(3) }
            do throws(HaulError) {
                return try RemoteURL(text)
            } catch {
                throw Aria2Error(code: 1, message: error.message)
            }
        }
        var position: Int?
        if params.value(4) != nil {
            position = try params.integer(4)
            guard position! >= 0 else {
                throw Aria2Error(code: 1, message: "Position must be greater than or equal to 0.")
            }
        }
        let record = try await record(id)
        guard !record.status.isTerminal || record.status == .failed else {
            throw Aria2Error(
                code: 1, message: "No URI to remove or add for GID#\(id): the download is \(record.status.rawValue)")
        }
        var urls = record.request.sources
        var deleted = 0
        for text in removing {
            if let index = urls.firstIndex(where: { $0.absoluteString == text }) {
                urls.remove(at: index)
                deleted += 1
            }
        }
        urls.insert(contentsOf: adding, at: min(position ?? urls.count, urls.count))
        guard !urls.isEmpty else { throw Aria2Error(code: 1, message: "GID#\(id) would have no URI left") }
        if deleted > 0 || !adding.isEmpty { try await manager.setSources(urls, for: id) }
        return (deleted, adding.count)
    }

    private func changePosition(_ params: Params) async throws -> Int {
        let id = try params.gid(0)
        let offset = try params.integer(1)
        let how = try params.string(2)
        guard ["POS_SET", "POS_CUR", "POS_END"].contains(how) else {
            throw Aria2Error(code: 1, message: "Illegal argument.")
        }
        _ = try await record(id)
        // aria2's waiting list: queued and paused downloads.
        let queue = try await manager.waitingIDs()
        guard let current = queue.firstIndex(of: id) else {
            throw Aria2Error(code: 1, message: "GID#\(id) not found in the waiting queue.")
        }
        let target =
            switch how {
            case "POS_SET": offset
            case "POS_CUR": current + offset
            default: queue.count - 1 + offset
            }
        return try await manager.move(id, toIndex: target)
    }

    private func changeOption(_ params: Params) async throws {
        let id = try params.gid(0)
        let options = try params.object(1)
        let record = try await record(id)
        guard !record.status.isTerminal else {
            throw Aria2Error(code: 1, message: "Cannot change option for GID#\(id)")
        }
        let change = try Aria2Options.downloadChange(options)
        if let rate = change.maxBytesPerSecond { try await manager.setMaxBytesPerSecond(rate, for: id) }
        if change.referer != nil || change.userAgent != nil {
            try await manager.setReferer(change.referer, userAgent: change.userAgent, for: id)
        }
        // Connections apply to the next start; a running download keeps its own, as aria2's do.
        if let connections = change.connections, record.status != .running {
            try await manager.setConnections(connections, for: id)
        }
    }

    /// Every value is checked before anything changes.
    private func changeGlobalOption(_ options: [String: JSONValue]) async throws {
        let change = try Aria2Options.globalChange(options)
        // Checked before anything changes; a refusal is code 1 with the policy's message.
        if let directory = change.directory { try defaults.policy.check(directory) }
        if let count = change.maxConcurrentDownloads { await manager.setMaxConcurrentDownloads(count) }
        if let rate = change.overall { await manager.setMaxBytesPerSecond(rate) }
        if let rate = change.perDownload { defaults.maxBytesPerSecond = rate }
        if let connections = change.connections { defaults.connections = connections }
        if let sequential = change.sequential { defaults.sequential = sequential }
        if let directory = change.directory { try defaults.setDirectory(directory) }
    }

    private func globalStat(into json: inout JSONWriter) async throws {
        let summary = try await LiveRuns.summary(manager)
        let count = { (statuses: [DownloadStatus]) in statuses.reduce(0) { $0 + (summary.counts[$1] ?? 0) } }
        json.object { json in
            json.field("downloadSpeed", String(Int64(summary.downloadSpeed)))
            json.field("numActive", String(count([.running])))
            json.field("numStopped", String(count([.completed, .failed, .removed])))
            json.field("numStoppedTotal", String(count([.completed, .failed, .removed])))
            json.field("numWaiting", String(count([.queued, .paused])))
            json.field("uploadSpeed", "0")
        }
    }

    // MARK: Helpers

    /// The download, removed ones included (aria2 shows them as `removed`); unknown: aria2's message.
    func record(_ id: DownloadID) async throws -> DownloadRecord {
        guard let record = try await manager.record(id) else {
            throw Aria2Error(code: 1, message: "GID \(id) is not found")
        }
        return record
    }

    /// Finished downloads: completed and failed in the order they were added (aria2 lists them
    /// in the order they stopped, which haul does not store), then removed ones.
    private func stopped() async throws -> [DownloadID] {
        let finished = Set(try await manager.ids(status: .completed) + manager.ids(status: .failed))
        return try await manager.ids(status: nil).filter(finished.contains) + manager.ids(status: .removed)
    }

    /// aria2's paging: a negative offset counts from the end and walks backwards.
    static func window(_ ids: [DownloadID], offset: Int, count: Int) throws -> [DownloadID] {
        guard count >= 0 else {
            throw Aria2Error(
                code: 1,
                message: "The integer parameter at 1 has invalid value: the value must be greater than or equal to 0.")
        }
        if offset >= 0 {
            return Array(ids.dropFirst(offset).prefix(count))
        }
        let start = ids.count + offset
        guard start >= 0 else { return [] }
        return Array(ids[...start].reversed().prefix(count))
    }

    private func writeStatuses(_ ids: [DownloadID], keys: Set<String>?, into json: inout JSONWriter) async throws {
        let records = try await manager.records(ids)
        let live = await LiveRuns.lookup(manager, ids)
        let keys = Aria2Status.Keys(keys)
        json.array(records) { json, record in
            status(record, live: live.progress(record.id)).write(to: &json, keys: keys)
        }
    }

    /// A download's status with the downloads its `addUri` linked to it.
    func status(_ record: DownloadRecord, live: Progress?) -> Aria2Status {
        var status = Aria2Status(record, live: live)
        status.followedBy = follows.followedBy(record.id)
        status.following = follows.following(record.id)
        return status
    }
}
