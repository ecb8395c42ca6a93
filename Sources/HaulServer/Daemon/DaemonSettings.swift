import Haul
import HaulAPI
import HaulCore
import Logging
import NIOConcurrencyHelpers

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the daemon itself holds beyond the manager, shared by the HTTP API and aria2's JSON-RPC:
/// the defaults for new downloads (changeable through either) and where downloads may go.
public final class DaemonDefaults: Sendable {
    private struct State {
        var connections: Int
        var directory: String
        var maxBytesPerSecond: Int64?
        var limitSchedule: SpeedSchedule?
    }

    private let state: NIOLockedValueBox<State>
    public let policy: DirectoryPolicy
    /// Resolves an add's name of content (`s3://`); nil: such names are refused.
    public let content: ContentResolver?

    public init(
        directory: String, connections: Int, maxBytesPerSecond: Int64? = nil, allowedDirectories: [String] = [],
        limitSchedule: SpeedSchedule? = nil, content: ContentResolver? = nil
    ) {
        self.content = content
        state = NIOLockedValueBox(
            State(
                connections: connections, directory: AddRequest.normalized(directory),
                maxBytesPerSecond: maxBytesPerSecond, limitSchedule: limitSchedule))
        policy = DirectoryPolicy(roots: [directory] + allowedDirectories)
    }

    /// Connections for new downloads that do not name theirs (`haul serve -x`).
    public var connections: Int {
        get { state.withLockedValue { $0.connections } }
        set { state.withLockedValue { $0.connections = newValue } }
    }

    /// The global limit's schedule (`--limit-schedule`, changed by a reload), shown by the
    /// options; nil without one.
    public var limitSchedule: SpeedSchedule? {
        get { state.withLockedValue { $0.limitSchedule } }
        set { state.withLockedValue { $0.limitSchedule = newValue } }
    }

    /// Where new downloads go unless they say (`-d`; aria2's global `dir`).
    public var directory: String { state.withLockedValue { $0.directory } }

    /// Changes the default directory; it must be one the policy allows.
    public func setDirectory(_ path: String) throws(HaulError) {
        guard path.hasPrefix("/") else { throw HaulError(.badRequest, "directory must be an absolute path: \(path)") }
        try policy.check(path)
        state.withLockedValue { $0.directory = AddRequest.normalized(path) }
    }

    /// The rate limit of new downloads that do not name theirs (aria2's global `max-download-limit`).
    public var maxBytesPerSecond: Int64? {
        get { state.withLockedValue { $0.maxBytesPerSecond } }
        set { state.withLockedValue { $0.maxBytesPerSecond = newValue } }
    }

    /// The engine's request for an add, with these defaults, inside the allowed directories.
    public func request(for add: AddRequest) throws(HaulError) -> DownloadRequest {
        var add = add
        if add.maxBytesPerSecond == nil { add.maxBytesPerSecond = maxBytesPerSecond }
        let request = try add.downloadRequest(defaultDirectory: directory, defaultConnections: connections)
        try policy.check(request.directory)
        return request
    }

    /// The engine's requests for an add: one for a URL, one per file for a name of content
    /// (`s3://BUCKET/PREFIX/`), each at its path beneath the add's directory, checked by its
    /// digest unless the add gives one, signed with the daemon's keys.
    public func requests(for add: AddRequest) async throws(HaulError) -> [DownloadRequest] {
        guard let name = try ContentName(parsing: add.url) else { return [try request(for: add)] }
        guard let content else {
            throw HaulError(.unsupportedScheme, "\(add.url): this daemon resolves no names of content")
        }
        let resolution = try await content.resolve(name, as: add.url)
        guard resolution.finish == nil else {
            throw HaulError(.unsupportedScheme, "\(add.url): the daemon does not take oci:// names yet (haul get does)")
        }
        let files = resolution.files
        if add.fileName != nil, files.count > 1 {
            throw HaulError(.usage, "fileName names one file; \(add.url) stands for \(files.count)")
        }
        let base = add.directory ?? directory
        return try files.map { file throws(HaulError) in
            var one = add
            one.url = file.url.absoluteString
            let (folder, name) = Paths.split(file.path)
            if folder != "." { one.directory = Paths.join(base, folder) }
            if one.fileName == nil { one.fileName = name }
            var request = try request(for: one)
            request.take(file, userChecksum: add.checksum != nil)
            return request
        }
    }
}

/// The settings `started` and `progress` events report (`maxConnections`, `maxBytesPerSecond`).
/// A `DownloadEvent` carries neither, so each is read from the store once per download while it
/// runs and kept here, shared by every open event stream; a change through the API forgets the
/// entry, and any event that ends a run (paused, completed, ...) drops it.
actor DownloadSettingsCache {
    struct Settings: Sendable, Hashable {
        var maxConnections: Int
        var maxBytesPerSecond: Int64?
    }

    private let manager: DownloadManager
    private var entries: [DownloadID: Settings] = [:]
    /// Bumped by `forget`: a store read that began before a change must not be kept after it.
    private var generation: UInt64 = 0

    init(manager: DownloadManager) {
        self.manager = manager
    }

    /// Adds the settings to an event that reports them, and drops them at the end of a run.
    func annotate(_ view: EventView, id: DownloadID) async -> EventView {
        guard view.carriesSettings else {
            if view.type != .retrying, view.type != .restarted { entries[id] = nil }
            return view
        }
        guard let settings = await settings(id) else { return view }
        var view = view
        view.maxConnections = settings.maxConnections
        view.maxBytesPerSecond = settings.maxBytesPerSecond
        return view
    }

    func forget(_ id: DownloadID) {
        generation &+= 1
        entries[id] = nil
    }

    private func settings(_ id: DownloadID) async -> Settings? {
        if let known = entries[id] { return known }
        let started = generation
        let found: DownloadRecord?
        do {
            found = try await manager.record(id)
        } catch {
            // The event still goes out, without its settings; the next one reads them again.
            await manager.configuration.logger.warning(
                "cannot read a download's settings for its event",
                metadata: [
                    "id": "\(id)", "error": "\(error)",
                ])
            return nil
        }
        guard let record = found else { return nil }
        let settings = Settings(
            maxConnections: record.request.connections, maxBytesPerSecond: record.request.maxBytesPerSecond)
        if generation == started { entries[id] = settings }
        return settings
    }
}
