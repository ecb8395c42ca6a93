import Crypto
import HaulCore

/// Turns `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:...`) into the blobs of one image and the
/// layout they go into: the manifest asked with the registry's token challenge answered
/// (anonymous, or with the user's credentials: a `Basic` registry gets them on every request, a
/// `Bearer` one a token from its realm), an index narrowed to one platform, each manifest
/// checked against its digest; the config and the layers become downloads by digest, each
/// checked against it; the manifest and the layout's `index.json` are written by
/// `ImageLayoutFinish` once every blob is in.
public struct OCIResolver: Sendable {
    /// Asks through this transport.
    public var transport: AsyncHTTPTransport
    /// `http` for `--plain-http`, else `https`.
    public var scheme: String
    /// The platform picked from an index.
    public var platform: OCIManifest.Platform
    /// The user's name and password for the registry (`--oci-auth`, Docker's `config.json`).
    public var credentials: Credentials?

    /// A resolver asking through `transport`.
    public init(
        transport: AsyncHTTPTransport, plainHTTP: Bool, platform: OCIManifest.Platform, credentials: Credentials?
    ) {
        self.transport = transport
        self.scheme = plainHTTP ? "http" : "https"
        self.platform = platform
        self.credentials = credentials
    }

    /// The most bytes a manifest may have.
    static let maxManifest = 4 << 20

    /// The blobs of `image` (for `platform`) and what completes the layout once they are in.
    public func resolve(_ image: ImageReference, shown: String) async throws(HaulError) -> (
        files: [ResolvedFile], finish: ImageLayoutFinish
    ) {
        var session = Session(resolver: self, image: image, shown: shown)
        var (bytes, mediaType) = try await session.manifest(image.manifestReference, expected: image.digest)
        var manifest = try OCIManifest.parse(bytes, mediaType: mediaType)
        var descriptor = OCIManifest.Descriptor(
            mediaType: mediaType ?? "application/vnd.oci.image.manifest.v1+json", digest: Self.digest(bytes),
            size: Int64(bytes.count))
        if case .index(let entries) = manifest {
            guard let entry = OCIManifest.entry(for: platform, in: entries) else {
                let offered = entries.compactMap { $0.platform?.description }.joined(separator: ", ")
                throw HaulError(.usage, "\(shown): the image has no \(platform) (it has \(offered))")
            }
            (bytes, mediaType) = try await session.manifest(entry.digest, expected: entry.digest)
            manifest = try OCIManifest.parse(bytes, mediaType: mediaType)
            descriptor = OCIManifest.Descriptor(mediaType: entry.mediaType, digest: entry.digest, size: entry.size)
        }
        guard case .image(let config, let layers) = manifest else {
            throw HaulError(.badRequest, "\(shown): the platform's manifest is another index")
        }
        var files: [ResolvedFile] = []
        var seen: Set<String> = []
        for blob in [config] + layers where seen.insert(blob.digest).inserted {
            let url = try RemoteURL("\(session.base)/v2/\(image.repository)/blobs/\(blob.digest)")
            var file = ResolvedFile(
                path: ImageLayout.blobPath(blob.digest), url: url, size: blob.size, checksum: blob.checksum)
            file.authorization = session.authorization
            file.credentials = session.basic
            files.append(file)
        }
        let name = image.tag ?? image.digest.map { "sha256-" + $0.dropFirst("sha256:".count) } ?? "latest"
        return (files, ImageLayoutFinish(manifest: descriptor, manifestBytes: bytes, name: name))
    }

    /// `sha256:` and the hex digest of `bytes`.
    static func digest(_ bytes: [UInt8]) -> String {
        "sha256:" + ServerDigest.hex(Array(SHA256.hash(data: bytes)))
    }

    /// One image's questions: the registry's base URL and the authorization its challenge led to.
    struct Session {
        let resolver: OCIResolver
        let image: ImageReference
        let shown: String
        /// `Bearer TOKEN` once a token was got.
        var authorization: String?
        /// The credentials sent as `Basic`, once the registry asked for them.
        var basic: Credentials?

        init(resolver: OCIResolver, image: ImageReference, shown: String) {
            self.resolver = resolver
            self.image = image
            self.shown = shown
        }

        var base: String { "\(resolver.scheme)://\(image.registry)" }

        /// The manifest `reference` names, checked against `expected` (a digest) or the
        /// registry's `Docker-Content-Digest`; its bytes and media type.
        mutating func manifest(_ reference: String, expected: String?) async throws(HaulError) -> ([UInt8], String?) {
            let url = try RemoteURL("\(base)/v2/\(image.repository)/manifests/\(reference)")
            var answered = false
            while true {
                var headers: HTTPHeaderList = ["Accept": OCIManifest.accepted.joined(separator: ", ")]
                if let authorization { headers.add(name: "Authorization", value: authorization) }
                let (head, body) = try await ask(url, headers: headers, credentials: basic)
                if head.status == 401, !answered,
                    let challenge = head.headers["WWW-Authenticate"].flatMap(RegistryChallenge.init)
                {
                    answered = true
                    try await answer(challenge)
                    continue
                }
                switch head.status {
                case 200: break
                case 401, 403:
                    throw HaulError(
                        .httpStatus,
                        "\(shown): access denied\(resolver.credentials == nil ? " without credentials (--oci-auth USER:PASSWORD, or docker login)" : "")",
                        httpStatus: head.status)
                case 404:
                    throw HaulError(
                        .httpStatus, "\(shown): no such image, tag or manifest (\(reference))", httpStatus: 404)
                default:
                    throw HaulError(
                        .httpStatus,
                        "\(shown): the registry answered HTTP \(head.status)\(ResponseCheck.reason(head.status))",
                        httpStatus: head.status)
                }
                let digest = OCIResolver.digest(body)
                if let expected = expected ?? head.headers["Docker-Content-Digest"], expected != digest {
                    throw HaulError(
                        .digestMismatch, "\(shown): the manifest's digest is \(digest), but it was asked as \(expected)"
                    )
                }
                let type = head.headers["Content-Type"].map { String($0.prefix { $0 != ";" }) }
                return (body, type)
            }
        }

        /// Answers a challenge: credentials for `Basic`, a token from the realm for `Bearer`.
        mutating func answer(_ challenge: RegistryChallenge) async throws(HaulError) {
            switch challenge {
            case .basic:
                guard let credentials = resolver.credentials else {
                    throw HaulError(
                        .httpStatus, "\(shown): the registry wants a user name and password (--oci-auth USER:PASSWORD)",
                        httpStatus: 401)
                }
                basic = credentials
            case .bearer(let realm, let service, let scope):
                let url = try RegistryChallenge.tokenURL(
                    realm: realm, service: service, scope: scope, repository: image.repository)
                let (head, body) = try await ask(url, headers: [:], credentials: resolver.credentials)
                guard head.status == 200 else {
                    throw HaulError(
                        .httpStatus, "\(shown): the registry's token server refused (HTTP \(head.status))",
                        httpStatus: head.status)
                }
                authorization = "Bearer " + (try RegistryChallenge.token(from: body))
            }
        }

        func ask(_ url: RemoteURL, headers: HTTPHeaderList, credentials: Credentials?) async throws(HaulError) -> (
            ResponseHead, [UInt8]
        ) {
            let plan = RequestPlan(url: url, range: nil, ifRange: nil, headers: headers, credentials: credentials)
            do throws(HaulError) {
                return try await resolver.transport.answer(plan, limit: OCIResolver.maxManifest)
            } catch {
                guard error.code == .network, resolver.scheme == "https", error.message.contains("TLS") else {
                    throw error
                }
                throw HaulError(
                    error.code, error.message + " (a registry without TLS is reached with --plain-http)",
                    httpStatus: error.httpStatus, cause: error.cause, underlying: error.underlying)
            }
        }
    }
}

extension ImageLayoutFinish {
    /// Writes the manifest blob, `oci-layout` and `index.json` in `directory` (each through a
    /// temporary file and a rename, so a reader never sees half of one).
    public func write(into directory: String) throws(HaulError) {
        let existing = try SmallFiles.read("index.json", beneath: directory, maxBytes: 16 << 20)
        let index = try ImageLayout.index(existing: existing, adding: manifest, named: name)
        try SmallFiles.write(manifestBytes, to: ImageLayout.blobPath(manifest.digest), beneath: directory)
        try SmallFiles.write(Array(ImageLayout.marker.utf8), to: "oci-layout", beneath: directory)
        try SmallFiles.write(index, to: "index.json", beneath: directory)
    }
}
