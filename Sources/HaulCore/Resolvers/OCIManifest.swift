/// What an OCI registry's manifests say, read without I/O: an image index (or Docker's manifest
/// list) with its platforms, or an image manifest (OCI's or Docker's schema 2) with its config
/// and layers; and which platform an index's entries are for.
public enum OCIManifest: Sendable, Equatable {
    /// A blob or manifest named by its digest: its media type, digest and length.
    public struct Descriptor: Sendable, Hashable, Codable {
        /// `application/vnd.oci.image.layer.v1.tar+gzip`, ...
        public var mediaType: String
        /// `sha256:` and 64 hex digits.
        public var digest: String
        /// Its length in bytes.
        public var size: Int64
        /// For an index's entry: the platform it is for.
        public var platform: Platform?

        /// A descriptor from its parts.
        public init(mediaType: String, digest: String, size: Int64, platform: Platform? = nil) {
            self.mediaType = mediaType
            self.digest = digest
            self.size = size
            self.platform = platform
        }

        /// The digest as a checksum haul verifies.
        public var checksum: Checksum { Checksum(algorithm: .sha256, hex: String(digest.dropFirst("sha256:".count))) }
    }

    /// An operating system and architecture (`linux/amd64`, `linux/arm64/v8`).
    public struct Platform: Sendable, Hashable, Codable, CustomStringConvertible {
        /// `linux`, ...
        public var os: String
        /// `amd64`, `arm64`, ...
        public var architecture: String
        /// `v7`, `v8`, or nil.
        public var variant: String?

        /// A platform from its parts.
        public init(os: String, architecture: String, variant: String? = nil) {
            self.os = os
            self.architecture = architecture
            self.variant = variant
        }

        /// Parses `OS/ARCH[/VARIANT]` (`--platform`). Throws `.usage` for any other text.
        public init(parsing text: String) throws(HaulError) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard (2...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty }) else {
                throw HaulError(.usage, "--platform takes OS/ARCH or OS/ARCH/VARIANT, as linux/amd64 (got '\(text)')")
            }
            self.init(os: parts[0], architecture: parts[1], variant: parts.count == 3 ? parts[2] : nil)
        }

        /// `OS/ARCH[/VARIANT]`.
        public var description: String { [os, architecture, variant].compactMap { $0 }.joined(separator: "/") }

        /// Whether an index's entry for `other` serves this platform: the same OS and
        /// architecture, and the same variant when this one names one (`arm64` takes `v8`).
        public func accepts(_ other: Platform) -> Bool {
            guard os == other.os, architecture == other.architecture else { return false }
            guard let variant else { return true }
            return variant == other.variant || (other.variant == nil && architecture == "arm64" && variant == "v8")
        }
    }

    /// An index (or manifest list): one manifest per platform.
    case index([Descriptor])
    /// An image: its config and its layers, in order.
    case image(config: Descriptor, layers: [Descriptor])

    /// The media types a client accepts, in the `Accept` of a manifest request.
    public static let accepted = [
        "application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]

    /// Reads a manifest's JSON; `mediaType` is the response's `Content-Type` (a manifest need
    /// not name its own type).
    ///
    /// - Throws: `.badRequest` when it is not JSON, not an index or an image manifest, or a
    ///   descriptor lacks its media type, a sha256 digest or a length.
    public static func parse(_ bytes: [UInt8], mediaType: String?) throws(HaulError) -> OCIManifest {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            throw HaulError(.badRequest, "the registry's manifest is not JSON: \(error.reason)")
        }
        guard let object = root.object else { throw HaulError(.badRequest, "the registry's manifest is not an object") }
        let type = object["mediaType"]?.string ?? mediaType ?? ""
        if let manifests = object["manifests"]?.array {
            return .index(try manifests.map(descriptor))
        }
        guard let config = object["config"], let layers = object["layers"]?.array else {
            throw HaulError(.badRequest, "the registry's manifest (\(type)) is neither an index nor an image manifest")
        }
        return .image(config: try descriptor(config), layers: try layers.map(descriptor))
    }

    static func descriptor(_ value: JSONValue) throws(HaulError) -> Descriptor {
        guard let object = value.object, let mediaType = object["mediaType"]?.string,
            let digest = object["digest"]?.string, ImageReference.isDigest(digest), let size = object["size"]?.integer,
            size >= 0
        else {
            throw HaulError(
                .badRequest, "the registry's manifest has an entry without a media type, a sha256 digest or a size")
        }
        var platform: Platform?
        if let given = object["platform"]?.object, let os = given["os"]?.string,
            let architecture = given["architecture"]?.string
        {
            platform = Platform(os: os, architecture: architecture, variant: given["variant"]?.string)
        }
        return Descriptor(mediaType: mediaType, digest: digest, size: size, platform: platform)
    }

    /// The entry of `entries` for `platform`; nil when the index has none.
    public static func entry(for platform: Platform, in entries: [Descriptor]) -> Descriptor? {
        entries.first { $0.platform.map(platform.accepts) ?? false }
    }
}
