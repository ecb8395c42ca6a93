import Haul
import HaulAPI
import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `aria2.*` methods that add downloads: `addUri` (alone, or prepared for a
/// `system.multicall`) and `addMetalink`. Both check every request (and read the cookie file)
/// before any is added. Internal rather than private only so `aria2(_:_:into:)` can call them.
extension Aria2RPC {
    /// `addUri(uris[, options[, position]])`: one file; the URIs after the first are its mirrors.
    /// A name of content (`s3://BUCKET/PREFIX/`) is one download per file, and the answer is the
    /// first one's gid (the others follow it in the queue).
    func addUri(_ params: Params) async throws -> DownloadID {
        let prepared = try await prepareAddUri(params)
        let ids = try await manager.add(prepared.requests, placements: prepared.placements, groups: prepared.groups)
            .map(\.id)
        follows.added(ids)
        return ids[0]
    }

    /// An `addUri` call read and checked, ready to add (alone, or with its neighbours in a
    /// `system.multicall`).
    struct PreparedAdd {
        /// One request, or one per file of a name of content.
        var requests: [DownloadRequest]
        /// Paused, and where in the waiting list: decided in the add's own queue step.
        var placement: AddPlacement
        /// For a name of content: the group of its downloads.
        var group: DownloadGroup?

        /// The group, of all its requests.
        var groups: [DownloadQueue.GroupAsk] { group.map { [.init($0, offsets: 0..<requests.count)] } ?? [] }

        /// Each request's placement: the files of a name of content one after the other.
        var placements: [AddPlacement] {
            requests.indices.map { offset in
                AddPlacement(startsPaused: placement.startsPaused, index: placement.index.map { $0 + offset })
            }
        }
    }

    func prepareAddUri(_ params: Params) async throws -> PreparedAdd {
        let uris = try params.array(0)
        guard !uris.isEmpty else { throw Aria2Error(code: 1, message: "URI is not provided.") }
        let texts = uris.compactMap(\.string)
        guard texts.count == uris.count, let uri = texts.first else { throw params.wrongType(0) }
        let options = try params.optionalObject(1)
        var position: Int?
        if params.value(2) != nil {
            position = try params.integer(2)
            guard position! >= 0 else {
                throw Aria2Error(code: 1, message: "Position must be greater than or equal to 0.")
            }
        }
        let add = try Aria2Options.addRequest(
            uri: uri, mirrors: Array(texts.dropFirst()), options: options, defaults: defaults)
        let headers = try Aria2Options.headers(options)
        let addition = try await defaults.addition(for: add)
        var requests = addition.requests
        if let headers { for index in requests.indices { requests[index].headers = headers } }
        guard !requests.isEmpty else {
            // No gid to answer with: every file of the name is in place with its digest. Its
            // group still goes in, with no download: its finish is written at once.
            if let group = addition.group {
                _ = try await manager.add([], placements: [], groups: [.init(group, offsets: 0..<0)])
            }
            throw Aria2Error(code: 1, message: "Every file of \(uri) is already in place; nothing to download.")
        }
        let now = Aria2Cookies.now()
        let jar = try await Aria2Cookies.jar(options, policy: defaults.policy, now: now)
        for index in requests.indices { Aria2Cookies.attach(jar, to: &requests[index], now: now) }
        return PreparedAdd(
            requests: requests,
            placement: AddPlacement(startsPaused: options["pause"]?.string == "true", index: position),
            group: addition.group)
    }

    /// `addMetalink(metalink[, options[, position]])`: the document in base64; one download per
    /// file, from its http(s) URLs as mirrors, checked by its digest, named as it says (options
    /// apply to each; `out` does not, as in aria2). Returns their gids.
    func addMetalink(_ params: Params) async throws -> [DownloadID] {
        guard let data = Data(base64Encoded: try params.string(0), options: .ignoreUnknownCharacters) else {
            throw Aria2Error(code: 1, message: "The metalink is not valid base64.")
        }
        let metalink: Metalink
        do throws(HaulError) {
            metalink = try Metalink.parse(String(decoding: data, as: UTF8.self))
        } catch {
            throw Aria2Error(code: 1, message: error.message)
        }
        var options = try params.optionalObject(1)
        options["out"] = nil
        var position: Int?
        if params.value(2) != nil {
            position = try params.integer(2)
            guard position! >= 0 else {
                throw Aria2Error(code: 1, message: "Position must be greater than or equal to 0.")
            }
        }
        // Every file's request is checked (and the cookie file read) before any is added.
        let headers = try Aria2Options.headers(options)
        var requests: [DownloadRequest] = []
        for file in metalink.files {
            var add = try Aria2Options.addRequest(
                uri: file.urls[0].absoluteString, mirrors: file.urls.dropFirst().map(\.absoluteString),
                options: options, defaults: defaults)
            add.fileName = file.name
            add.checksum = add.checksum ?? file.checksums.first?.description
            var request = try defaults.request(for: add)
            request.pieceHashes = file.pieces
            if let headers { request.headers = headers }
            requests.append(request)
        }
        let now = Aria2Cookies.now()
        let jar = try await Aria2Cookies.jar(options, policy: defaults.policy, now: now)
        for index in requests.indices { Aria2Cookies.attach(jar, to: &requests[index], now: now) }
        // Each file at its own index, in order, as aria2 inserts them.
        let paused = options["pause"]?.string == "true"
        let placements = requests.indices.map { offset in
            AddPlacement(startsPaused: paused, index: position.map { $0 + offset })
        }
        return try await manager.add(requests, placements: placements).map(\.id)
    }
}
