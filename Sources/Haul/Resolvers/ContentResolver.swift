import HaulCore

/// Turns a name of content into the files it stands for, for `haul get` and the daemon alike:
/// `s3://` through `S3Resolver`, at the store and in the region set here, with the keys of
/// `http.awsCredentials`. Each call makes its own transport and closes it.
public struct ContentResolver: Sendable {
    /// Where `s3://` names are fetched from.
    public var s3Endpoint: S3Endpoint
    /// The region asked first.
    public var s3Region: String
    /// The transport settings the questions go with (proxies, trust roots, the AWS keys).
    public var http: AsyncHTTPTransport.Configuration

    /// A resolver for these settings.
    public init(s3Endpoint: S3Endpoint, s3Region: String, http: AsyncHTTPTransport.Configuration) {
        self.s3Endpoint = s3Endpoint
        self.s3Region = s3Region
        self.http = http
    }

    /// The files `name` stands for, and the keys skipped because they name no file beneath the
    /// directory.
    ///
    /// - Throws: `HaulError`: `.unsupportedScheme` for `hf://` and `oci://` (not yet), and what
    ///   `S3Resolver.resolve` throws.
    public func resolve(_ name: ContentName, as text: String) async throws(HaulError) -> (
        files: [ResolvedFile], skipped: [String]
    ) {
        switch name {
        case .s3(let s3):
            let transport = AsyncHTTPTransport(configuration: http)
            let result: Result<(files: [ResolvedFile], skipped: [String]), HaulError>
            do throws(HaulError) {
                result = .success(
                    try await S3Resolver(endpoint: s3Endpoint, region: s3Region, transport: transport).resolve(s3))
            } catch {
                result = .failure(error)
            }
            await transport.shutdown()
            return try result.get()
        case .hub, .image:
            throw HaulError(.unsupportedScheme, "\(text): hf:// and oci:// names are not supported yet")
        }
    }
}

extension DownloadRequest {
    /// What a resolved file brings besides its URL and place: the signing scope, and its digest
    /// (or its parts') unless the user gave one (`userChecksum`), which wins.
    public mutating func take(_ file: ResolvedFile, userChecksum: Bool) {
        signing = file.signing
        guard !userChecksum else { return }
        checksum = file.checksum
        compositeChecksum = file.composite
    }
}
