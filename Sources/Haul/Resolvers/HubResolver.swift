import HaulCore

/// Turns `hf://ORG/REPO[@REVISION][/PATH]` into the repository's files at one commit: the
/// revision asked of the Hub's API (with `HF_TOKEN` as `Bearer`, to the Hub's host only), the
/// files a path and the globs select, each fetched from `/resolve/COMMIT/PATH` (every request
/// asks the Hub again and follows its redirect to the CDN, so a signed CDN URL that expired is
/// never asked twice and the bytes are kept), LFS files checked against their SHA-256, the
/// others against their git blob id (their ETag on the Hub) and their length. With `cache`, the files go to huggingface_hub's cache layout
/// (`HubCacheFinish` makes the snapshot's links and the ref once they are in). A gated
/// repository is refused without a token before any file is asked, and with one whose user has
/// not accepted its terms after one (`HubAccess`).
public struct HubResolver: Sendable {
    /// Asks through this transport.
    public var transport: AsyncHTTPTransport
    /// The Hub (`HF_ENDPOINT`, default `https://huggingface.co`).
    public var endpoint: RemoteURL
    /// The user's token (`HF_TOKEN`, `--hf-token-file`).
    public var token: String?
    /// `--include` patterns (none: every file).
    public var include: [String]
    /// `--exclude` patterns.
    public var exclude: [String]
    /// Write huggingface_hub's cache layout rather than the repository's tree.
    public var cache: Bool

    /// A resolver with these settings.
    public init(
        transport: AsyncHTTPTransport, endpoint: RemoteURL, token: String?, include: [String], exclude: [String],
        cache: Bool
    ) {
        self.transport = transport
        self.endpoint = endpoint
        self.token = token
        self.include = include
        self.exclude = exclude
        self.cache = cache
    }

    /// The files `name` stands for, those of its listing skipped (a path no file beneath a
    /// directory can have), and with `cache` what completes the cache once they are in.
    public func resolve(_ name: HubName, shown: String) async throws(HaulError) -> (
        files: [ResolvedFile], skipped: [SkippedPath], finish: HubCacheFinish?
    ) {
        let base = "\(endpoint.scheme)://\(endpoint.authority)"
        let url = try RemoteURL(base + HubAPI.revisionPath(name))
        var plan = RequestPlan(url: url, range: nil, ifRange: nil, headers: ["Accept": "application/json"])
        plan.authorization = token.map { "Bearer \($0)" }
        let (head, body) = try await transport.answer(plan, limit: 64 << 20)
        guard head.status == 200 else { throw refusal(head, name: name, shown: shown) }
        let revision = try HubAPI.revision(body)
        let (selected, skipped) = HubAPI.select(revision.files, under: name.path, include: include, exclude: exclude)
        guard !selected.isEmpty else {
            throw HaulError(
                .httpStatus, "\(shown): no file of \(name.repository) at \(name.revisionOrMain) matches",
                httpStatus: 404)
        }
        switch HubAccess.step(gated: revision.gated, hasToken: token != nil, name: name) {
        case .fetch: break
        case .refuse(let error): throw error
        case .probe:
            let first = try RemoteURL(
                base + HubAPI.resolvePath(name, commit: revision.commit, file: selected[0].file.path))
            var probe = RequestPlan(url: first, range: nil, ifRange: nil, headers: [:], method: "HEAD")
            probe.authorization = token.map { "Bearer \($0)" }
            let (answer, _) = try await transport.answer(probe, limit: 1 << 20)
            guard answer.status < 400 else { throw refusal(answer, name: name, shown: shown) }
        }
        var files: [ResolvedFile] = []
        var blobs: Set<String> = []
        var links: [HubCacheFinish.Link] = []
        for (file, local) in selected {
            let fileURL = try RemoteURL(base + HubAPI.resolvePath(name, commit: revision.commit, file: file.path))
            var path = local
            if cache {
                guard let etag = file.etag else {
                    throw HaulError(.badRequest, "\(shown): the Hub gives \(file.path) no blob id or sha256")
                }
                path = HubCache.blob(name, etag: etag)
                let snapshot = HubCache.snapshot(name, commit: revision.commit, path: file.path, etag: etag)
                links.append(HubCacheFinish.Link(link: snapshot.link, target: snapshot.target))
                // Two files of the same content are one blob, fetched once.
                guard blobs.insert(etag).inserted else { continue }
            }
            var resolved = ResolvedFile(
                path: path, url: fileURL, size: file.size,
                checksum: file.lfsSHA256.map { Checksum(algorithm: .sha256, hex: $0) }
                    ?? file.blobID.map { Checksum(algorithm: .gitBlob, hex: $0) })
            resolved.authorization = token.map { "Bearer \($0)" }
            files.append(resolved)
        }
        let finish =
            cache
            ? HubCacheFinish(
                links: links,
                ref: name.revisionOrMain == revision.commit
                    ? nil
                    : HubCacheFinish.Ref(
                        path: HubCache.ref(name, revision: name.revisionOrMain), commit: revision.commit))
            : nil
        return (files, skipped, finish)
    }

    /// The Hub's refusal in words (`HubAccess.refusal`).
    func refusal(_ head: ResponseHead, name: HubName, shown: String) -> HaulError {
        HubAccess.refusal(
            status: head.status, errorCode: head.headers["X-Error-Code"], name: name, shown: shown,
            hasToken: token != nil)
    }
}

extension HubCacheFinish {
    /// Makes the links and writes the ref in `directory` (the cache).
    public func write(into directory: String) throws(HaulError) {
        for link in links { try SmallFiles.link(link.link, to: link.target, beneath: directory) }
        if let ref { try SmallFiles.write(Array(ref.commit.utf8), to: ref.path, beneath: directory) }
    }
}
