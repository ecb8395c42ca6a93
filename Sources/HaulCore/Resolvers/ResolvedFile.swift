/// One file a name of content (`s3://`, ...) resolved to: what the engine downloads, an HTTP
/// download like any other, and what its request carries besides the URL.
public struct ResolvedFile: Sendable, Equatable {
    /// Where it goes beneath the download directory (`a/b.bin`): never absolute, never `..`.
    public var path: String
    /// Where its bytes are.
    public var url: RemoteURL
    /// Its length, when the source said.
    public var size: Int64?
    /// A digest of the whole file to check it against.
    public var checksum: Checksum?
    /// The digest of its parts' digests, to check it against part by part.
    public var composite: CompositeChecksum?
    /// How each of its requests is signed as it is sent; nil: not signed.
    public var signing: SigV4Scope?
    /// The `Authorization` its requests carry to the URL's origin (a registry's `Bearer`
    /// token); never stored with the download.
    public var authorization: String?
    /// `Basic` credentials for the URL's origin (a registry that asks for them).
    public var credentials: Credentials?

    /// A file from its parts.
    public init(
        path: String, url: RemoteURL, size: Int64? = nil, checksum: Checksum? = nil,
        composite: CompositeChecksum? = nil, signing: SigV4Scope? = nil
    ) {
        self.path = path
        self.url = url
        self.size = size
        self.checksum = checksum
        self.composite = composite
        self.signing = signing
    }
}
