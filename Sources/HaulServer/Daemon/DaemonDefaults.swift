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
        var sequential = false
    }

    private let state: NIOLockedValueBox<State>
    public let policy: DirectoryPolicy
    /// Resolves an add's name of content (`s3://`); nil: such names are refused.
    public let content: ContentResolver?
    /// Where `hf://` files go when the daemon keeps them in the Hub's cache (`--hf-cache`).
    let hubCache: String?
    /// Whether names whose files need a finish once in (`oci://`, `hf://` into the cache) are
    /// taken: their group keeps the finish, and the queue writes it (false: refused).
    let keepsFinishes: Bool
    /// Where a name's skipped paths are told (one warning each).
    let logger: Logger

    /// `keepsFinishes`: layouts and caches are completed (false: `oci://` and the Hub's cache are
    /// refused); `hubCache`: the directory of `hf://` files in the Hub's cache layout.
    init(
        directory: String, connections: Int, maxBytesPerSecond: Int64? = nil, allowedDirectories: [String] = [],
        limitSchedule: SpeedSchedule? = nil, content: ContentResolver? = nil, keepsFinishes: Bool = false,
        hubCache: String? = nil, logger: Logger = Daemon.defaultLogger
    ) {
        self.logger = logger
        self.content = content
        self.keepsFinishes = keepsFinishes
        self.hubCache = hubCache
        state = NIOLockedValueBox(
            State(
                connections: connections, directory: AddRequest.normalized(directory),
                maxBytesPerSecond: maxBytesPerSecond, limitSchedule: limitSchedule))
        policy = DirectoryPolicy(roots: [directory] + allowedDirectories + (hubCache.map { [$0] } ?? []))
    }

    /// The same, with no finishes: `oci://` names and the Hub's cache are refused.
    public convenience init(
        directory: String, connections: Int, maxBytesPerSecond: Int64? = nil, allowedDirectories: [String] = [],
        limitSchedule: SpeedSchedule? = nil, content: ContentResolver? = nil
    ) {
        self.init(
            directory: directory, connections: connections, maxBytesPerSecond: maxBytesPerSecond,
            allowedDirectories: allowedDirectories, limitSchedule: limitSchedule, content: content, keepsFinishes: false
        )
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

    /// Whether new downloads that do not say are read in order (`haul serve --sequential`;
    /// aria2's global `stream-piece-selector`).
    public var sequential: Bool {
        get { state.withLockedValue { $0.sequential } }
        set { state.withLockedValue { $0.sequential = newValue } }
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
        if add.sequential == nil { add.sequential = sequential }
        let request = try add.downloadRequest(defaultDirectory: directory, defaultConnections: connections)
        try policy.check(request.directory)
        return request
    }

    /// What an add adds: its downloads' requests, and the group a name of content makes of them.
    public struct Addition: Sendable {
        /// The engine's requests, in order.
        public var requests: [DownloadRequest]
        /// For a name of content: the group of its downloads (`ContentExpansion`); nil for a URL.
        public var group: DownloadGroup?
    }

    /// The engine's requests for an add: one for a URL, one per file for a name of content
    /// (`s3://BUCKET/PREFIX/`, `hf://`, `oci://`), each at its path beneath the add's directory,
    /// checked by its digest unless the add gives one, signed with the daemon's keys, and the
    /// group they make (`ContentExpansion`, the expansion `haul get` uses). A file already in
    /// place with its digest gets none (the answer may be empty); a name whose files need a finish
    /// keeps it in its group. A listed path no file beneath a directory can have is skipped with
    /// a warning naming it, as `haul get` skips it; a source's refusal is `refused(_:)`'s.
    public func addition(for add: AddRequest) async throws(HaulError) -> Addition {
        guard let name = try ContentName(parsing: add.url) else { return Addition(requests: [try request(for: add)]) }
        guard let content else {
            throw HaulError(.unsupportedScheme, "\(add.url): this daemon resolves no names of content")
        }
        let resolution: ContentResolver.Resolution
        do throws(HaulError) {
            resolution = try await content.resolve(name, as: add.url)
        } catch {
            throw Self.refused(error)
        }
        if resolution.finish != nil, !keepsFinishes {
            throw HaulError(.unsupportedScheme, "\(add.url): this daemon cannot complete such a name")
        }
        var base = add.directory ?? directory
        if case .hub = name, let hubCache, add.directory == nil { base = hubCache }
        try policy.check(base)
        let expansion = try await ContentExpansion.expand(
            resolution, name: add.url, into: base, namesOneFile: add.fileName != nil,
            createdAt: Int64(Date().timeIntervalSince1970))
        for entry in expansion.skipped { logger.warning("\(add.url): \(entry.message)") }
        var requests: [DownloadRequest] = []
        for file in expansion.files {
            var one = add
            one.url = file.url.absoluteString
            let destination = ContentExpansion.destination(of: file, beneath: base)
            one.directory = destination.directory
            if one.fileName == nil { one.fileName = destination.name }
            var request = try request(for: one)
            request.take(file, userChecksum: add.checksum != nil)
            requests.append(request)
        }
        return Addition(requests: requests, group: expansion.group)
    }

    /// A name of content its source refuses (401 or 403: a gated repository without a token or
    /// with one that has not accepted its terms, a bucket without keys) is `forbidden` (REST
    /// 403), never a 401, which a client reads as the daemon refusing its own token.
    static func refused(_ error: HaulError) -> HaulError {
        guard error.code == .httpStatus, error.httpStatus == 401 || error.httpStatus == 403 else { return error }
        return HaulError(.forbidden, error.message, httpStatus: error.httpStatus)
    }
}
