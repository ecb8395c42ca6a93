import HaulCore

/// Turns a name of content into the files it stands for, for `haul get` and the daemon alike:
/// `s3://` through `S3Resolver`, at the store and in the region set here, with the keys of
/// `http.awsCredentials`; `oci://` through `OCIResolver`. Each call makes its own transport and
/// closes it.
public struct ContentResolver: Sendable {
    /// Where `s3://` names are fetched from.
    public var s3Endpoint: S3Endpoint
    /// The region asked first.
    public var s3Region: String
    /// The transport settings the questions go with (proxies, trust roots, the AWS keys).
    public var http: AsyncHTTPTransport.Configuration
    /// How registries are reached: plain HTTP or TLS, the platform, the user's credentials.
    public var oci: OCISettings

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
        /// Keys skipped because they name no file beneath the directory.
        public var skipped: [String] = []
        /// What completes an image layout once every file is in (`oci://`).
        public var layout: ImageLayoutFinish?
    }

    /// A resolver for these settings.
    public init(
        s3Endpoint: S3Endpoint, s3Region: String, http: AsyncHTTPTransport.Configuration,
        oci: OCISettings = .standard
    ) {
        self.s3Endpoint = s3Endpoint
        self.s3Region = s3Region
        self.http = http
        self.oci = oci
    }

    /// The files `name` stands for.
    ///
    /// - Throws: `HaulError`: `.unsupportedScheme` for `hf://` (not yet), and what
    ///   `S3Resolver.resolve` and `OCIResolver.resolve` throw.
    public func resolve(_ name: ContentName, as text: String) async throws(HaulError) -> Resolution {
        let transport = AsyncHTTPTransport(configuration: http)
        let result: Result<Resolution, HaulError>
        do throws(HaulError) {
            switch name {
            case .s3(let s3):
                let found = try await S3Resolver(endpoint: s3Endpoint, region: s3Region, transport: transport)
                    .resolve(s3)
                result = .success(Resolution(files: found.files, skipped: found.skipped))
            case .image(let image):
                let found = try await OCIResolver(
                    transport: transport, plainHTTP: oci.plainHTTP, platform: oci.platform,
                    credentials: oci.credentials[image.registry]
                ).resolve(image, shown: text)
                result = .success(Resolution(files: found.files, layout: found.finish))
            case .hub:
                throw HaulError(.unsupportedScheme, "\(text): hf:// names are not supported yet")
            }
        } catch {
            result = .failure(error)
        }
        await transport.shutdown()
        return try result.get()
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
