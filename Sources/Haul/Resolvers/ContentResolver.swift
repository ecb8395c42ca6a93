import HaulCore

/// Turns a name of content into the files it stands for, for `haul get` and the daemon alike:
/// `s3://` through `S3Resolver`, at the store and in the region set here, with the keys of
/// `http.awsCredentials`; `oci://` through `OCIResolver`; `hf://` through `HubResolver`. Each
/// call makes its own transport and closes it.
public struct ContentResolver: Sendable {
    /// Where `s3://` names are fetched from.
    public var s3Endpoint: S3Endpoint
    /// The region asked first.
    public var s3Region: String
    /// The transport settings the questions go with (proxies, trust roots, the AWS keys).
    public var http: AsyncHTTPTransport.Configuration
    /// How registries are reached: plain HTTP or TLS, the platform, the user's credentials.
    public var oci: OCISettings
    /// Where the Hub is, the user's token, the globs, and whether files go to its cache.
    public var hub: HubSettings

    /// How `hf://` names are fetched.
    public struct HubSettings: Sendable {
        /// The Hub (`HF_ENDPOINT`).
        public var endpoint: RemoteURL
        /// The user's token (`HF_TOKEN`, `--hf-token-file`).
        public var token: String?
        /// `--include` patterns.
        public var include: [String] = []
        /// `--exclude` patterns.
        public var exclude: [String] = []
        /// `--hf-cache`: huggingface_hub's cache layout rather than the repository's tree.
        public var cache = false

        /// Settings for the Hub at `endpoint` with `token`.
        public init(endpoint: RemoteURL, token: String?) {
            self.endpoint = endpoint
            self.token = token
        }

        /// The Hub `environment` names (`HF_ENDPOINT`, default `https://huggingface.co`) with its
        /// `HF_TOKEN`.
        ///
        /// - Throws: `.usage` when `HF_ENDPOINT` is no http(s) URL.
        public static func from(environment: [String: String]) throws(HaulError) -> HubSettings {
            let text = environment["HF_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://huggingface.co"
            let endpoint: RemoteURL
            do {
                endpoint = try RemoteURL(text)
            } catch {
                throw HaulError(.usage, "HF_ENDPOINT: \(error.message)")
            }
            return HubSettings(endpoint: endpoint, token: environment["HF_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        }
    }

    /// How `oci://` names are fetched.
    public struct OCISettings: Sendable {
        /// `--plain-http`: the registry speaks HTTP without TLS.
        public var plainHTTP: Bool
        /// The platform taken from an index (`--platform`, default the machine's).
        public var platform: OCIManifest.Platform
        /// The user's name and password per registry host (`--oci-auth`, Docker's `config.json`).
        public var credentials: [String: Credentials]

        /// Settings from their parts.
        public init(plainHTTP: Bool, platform: OCIManifest.Platform, credentials: [String: Credentials]) {
            self.plainHTTP = plainHTTP
            self.platform = platform
            self.credentials = credentials
        }

        /// TLS, this machine's platform, no credentials.
        public static let standard = OCISettings(plainHTTP: false, platform: .machine, credentials: [:])
    }

    /// What a name resolved to.
    public struct Resolution: Sendable {
        /// The files to download.
        public var files: [ResolvedFile]
        /// Listed paths (S3 keys, the Hub's files) skipped because they name no file beneath
        /// the directory.
        public var skipped: [SkippedPath] = []
        /// What completes the files once every one is in (an image layout, the Hub's cache).
        public var finish: ContentFinish?
    }

    /// A resolver for these settings.
    public init(
        s3Endpoint: S3Endpoint, s3Region: String, http: AsyncHTTPTransport.Configuration,
        oci: OCISettings = .standard, hub: HubSettings
    ) {
        self.s3Endpoint = s3Endpoint
        self.s3Region = s3Region
        self.http = http
        self.oci = oci
        self.hub = hub
    }

    /// The files `name` stands for.
    ///
    /// - Throws: `HaulError`: what `S3Resolver.resolve`, `OCIResolver.resolve` and
    ///   `HubResolver.resolve` throw.
    public func resolve(_ name: ContentName, as text: String) async throws(HaulError) -> Resolution {
        try await AsyncHTTPTransport.withTransport(configuration: http) { transport throws(HaulError) in
            switch name {
            case .s3(let s3):
                let found = try await S3Resolver(endpoint: s3Endpoint, region: s3Region, transport: transport)
                    .resolve(s3)
                return Resolution(files: found.files, skipped: found.skipped)
            case .image(let image):
                let found = try await OCIResolver(
                    transport: transport, plainHTTP: oci.plainHTTP, platform: oci.platform,
                    credentials: oci.credentials[image.registry]
                ).resolve(image, shown: text)
                return Resolution(files: found.files, finish: .imageLayout(found.finish))
            case .hub(let name):
                let found = try await HubResolver(
                    transport: transport, endpoint: hub.endpoint, token: hub.token, include: hub.include,
                    exclude: hub.exclude, cache: hub.cache
                ).resolve(name, shown: text)
                return Resolution(
                    files: found.files, skipped: found.skipped, finish: found.finish.map(ContentFinish.hubCache))
            }
        }
    }
}

extension OCIManifest.Platform {
    /// The platform this program was built for: `linux/amd64`, `linux/arm64`.
    public static var machine: OCIManifest.Platform {
        #if arch(arm64)
            OCIManifest.Platform(os: "linux", architecture: "arm64")
        #else
            OCIManifest.Platform(os: "linux", architecture: "amd64")
        #endif
    }
}

extension AsyncHTTPTransport {
    /// A resolver's question: `plan` sent, its answer's head and whole body (at most `limit`
    /// bytes). Throws the transport's `HaulError`, a body past `limit` as `.badRequest`.
    func answer(_ plan: RequestPlan, limit: Int) async throws(HaulError) -> (ResponseHead, [UInt8]) {
        do {
            let (head, body) = try await send(plan)
            var bytes: [UInt8] = []
            while let chunk = try await body.next() {
                guard bytes.count + chunk.count <= limit else {
                    throw HaulError(.badRequest, "\(plan.url): the answer is larger than \(limit >> 20) MiB")
                }
                chunk.withUnsafeBytes { bytes.append(contentsOf: $0) }
            }
            return (head, bytes)
        } catch let error as HaulError {
            throw error
        } catch {
            throw HaulError(.network, "\(plan.url): \(error)", underlying: error)
        }
    }
}

extension DownloadRequest {
    /// What a resolved file brings besides its URL and place: the signing scope, and its digest
    /// (or its parts') unless the user gave one (`userChecksum`), which wins.
    public mutating func take(_ file: ResolvedFile, userChecksum: Bool) {
        signing = file.signing
        if let given = file.authorization { authorization = given }
        if let given = file.credentials { credentials = given }
        guard !userChecksum else { return }
        checksum = file.checksum
        compositeChecksum = file.composite
    }
}

extension ContentFinish {
    /// Writes what is left in `directory`, the downloads' root, once every file is in: so no
    /// reader finds a layout or a snapshot that names a missing file.
    public func write(into directory: String) throws(HaulError) {
        switch self {
        case .imageLayout(let layout): try layout.write(into: directory)
        case .hubCache(let cache): try cache.write(into: directory)
        }
    }
}
