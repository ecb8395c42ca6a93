/// What completes the files of a name of content once every one is in, kept with its group
/// (`DownloadGroup`) and written by the engine (`Haul`'s `ResolutionFinish`): an image layout's
/// manifest and `index.json`, or the Hub cache's snapshot links and ref.
public enum ContentFinish: Sendable, Hashable, Codable {
    /// An OCI image layout's manifest, `oci-layout` and `index.json`.
    case imageLayout(ImageLayoutFinish)
    /// huggingface_hub's cache: the snapshot's links and the ref.
    case hubCache(HubCacheFinish)
}

/// What completes an image layout once its blobs are in: the manifest written as a blob (it was
/// fetched and checked by the resolver), `oci-layout`, and `index.json` naming the image.
public struct ImageLayoutFinish: Sendable, Hashable, Codable {
    /// The image's manifest, as `index.json` names it.
    public var manifest: OCIManifest.Descriptor
    /// Its bytes, checked against its digest.
    public var manifestBytes: [UInt8]
    /// The name in `index.json` (`org.opencontainers.image.ref.name`): the tag.
    public var name: String

    /// The finish of the image whose manifest is `manifest` (its bytes `manifestBytes`), named `name`.
    public init(manifest: OCIManifest.Descriptor, manifestBytes: [UInt8], name: String) {
        self.manifest = manifest
        self.manifestBytes = manifestBytes
        self.name = name
    }
}

/// What completes huggingface_hub's cache once a revision's blobs are in: each file's link in
/// `snapshots/COMMIT/` and `refs/REVISION`.
public struct HubCacheFinish: Sendable, Hashable, Codable {
    /// A link beneath the cache and what it points to (relative).
    public struct Link: Sendable, Codable, Hashable {
        /// The link's path beneath the cache.
        public var link: String
        /// What it points to, relative to it.
        public var target: String

        /// The link at `link`, to `target`.
        public init(link: String, target: String) {
            self.link = link
            self.target = target
        }
    }

    /// The file of a ref and the commit it holds.
    public struct Ref: Sendable, Codable, Hashable {
        /// The ref's path beneath the cache.
        public var path: String
        /// The commit.
        public var commit: String

        /// The ref at `path`, holding `commit`.
        public init(path: String, commit: String) {
            self.path = path
            self.commit = commit
        }
    }

    /// Each link of the snapshot.
    public var links: [Link]
    /// The ref; nil when the revision is the commit.
    public var ref: Ref?

    /// The links of a snapshot and its ref.
    public init(links: [Link], ref: Ref?) {
        self.links = links
        self.ref = ref
    }
}
