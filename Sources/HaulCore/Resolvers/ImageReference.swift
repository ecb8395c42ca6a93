/// An image named the way Docker and OCI tools name one (`oci://REGISTRY/REPOSITORY:TAG` or
/// `@sha256:...`), with Docker Hub's short forms spelled out: a name without a registry is on
/// Docker Hub, a Docker Hub name without a slash is under `library/`, and `docker.io` is served
/// by `registry-1.docker.io`.
public struct ImageReference: Sendable, Equatable {
    /// The registry's host (and port), as requests go to it: `registry-1.docker.io`, `ghcr.io`,
    /// `127.0.0.1:5000`.
    public var registry: String
    /// The repository's path in the registry: `library/ubuntu`, `org/image`.
    public var repository: String
    /// The tag, when the name gives one (or none, and no digest: `latest`).
    public var tag: String?
    /// The manifest's digest, when the name gives one (`sha256:` and 64 hex digits).
    public var digest: String?

    /// Docker Hub's name for itself in image names.
    public static let dockerHub = "docker.io"
    /// The host that serves Docker Hub's registry API.
    public static let dockerHubRegistry = "registry-1.docker.io"

    /// The reference a manifest is asked for by: the digest if there is one, else the tag.
    public var manifestReference: String { digest ?? tag ?? "latest" }

    /// Parses the part after `oci://`. Throws a `.badURL` error naming what is wrong.
    public init(parsing name: String) throws(HaulError) {
        func bad(_ why: String) -> HaulError { HaulError(.badURL, "bad image name 'oci://\(name)': \(why)") }
        var rest = Substring(name)
        if let at = rest.firstIndex(of: "@") {
            let digest = String(rest[rest.index(after: at)...])
            guard Self.isDigest(digest) else { throw bad("a digest is sha256: and 64 hex digits") }
            self.digest = digest
            rest = rest[..<at]
        }
        // A tag follows the last ':' after the last '/' (a ':' before it is a registry's port).
        let lastSlash = rest.lastIndex(of: "/") ?? rest.startIndex
        if let colon = rest[lastSlash...].lastIndex(of: ":") {
            let tag = String(rest[rest.index(after: colon)...])
            guard Self.isTag(tag) else { throw bad("a tag is up to 128 letters, digits, '_', '.' and '-'") }
            self.tag = tag
            rest = rest[..<colon]
        }
        var parts = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 1, !parts.contains("") else { throw bad("no repository") }
        var registry = Self.dockerHub
        if parts.count > 1, let first = parts.first,
            first.contains(".") || first.contains(":") || first == "localhost"
        {
            registry = first.lowercased()
            parts.removeFirst()
        }
        if registry == Self.dockerHub || registry == "index.docker.io" {
            registry = Self.dockerHubRegistry
            if parts.count == 1 { parts.insert("library", at: 0) }
        }
        guard parts.allSatisfy(Self.isPathComponent) else {
            throw bad("a repository's path is lower-case letters and digits, parts joined by '.', '_', '__' or '-'")
        }
        self.registry = registry
        self.repository = parts.joined(separator: "/")
    }

    /// `sha256:` and 64 lower-case hex digits (the only algorithm registries must accept).
    static func isDigest(_ text: String) -> Bool {
        guard text.hasPrefix("sha256:") else { return false }
        let hex = text.utf8.dropFirst(7)
        return hex.count == 64 && hex.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// OCI's tag: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
    static func isTag(_ text: String) -> Bool {
        func word(_ byte: UInt8) -> Bool {
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
        }
        guard let first = text.utf8.first, word(first), text.utf8.count <= 128 else { return false }
        return text.utf8.allSatisfy { word($0) || $0 == 46 || $0 == 45 }
    }

    /// OCI's path component: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
    static func isPathComponent(_ text: String) -> Bool {
        func alphanumeric(_ byte: UInt8) -> Bool { (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 122) }
        let bytes = Array(text.utf8)
        guard let first = bytes.first, let last = bytes.last, alphanumeric(first), alphanumeric(last) else {
            return false
        }
        var index = 0
        while index < bytes.count {
            if alphanumeric(bytes[index]) {
                index += 1
                continue
            }
            // A separator: '.', '_', '__' or a run of '-', then an alphanumeric.
            var end = index + 1
            if bytes[index] == 95, end < bytes.count, bytes[end] == 95 { end += 1 }
            if bytes[index] == 45 { while end < bytes.count, bytes[end] == 45 { end += 1 } }
            guard [46, 95, 45].contains(bytes[index]), end < bytes.count, alphanumeric(bytes[end]) else { return false }
            index = end
        }
        return true
    }
}
