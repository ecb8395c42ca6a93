/// A registry's answer to a request without credentials (`401` with `WWW-Authenticate`), as the
/// Distribution spec's token flow reads it: `Bearer realm=...,service=...,scope=...` asks for a
/// token from the realm; `Basic` asks for the user's name and password on every request.
public enum RegistryChallenge: Sendable, Equatable {
    /// Get a token from `realm` for `service` and `scope`, then send it as `Bearer`.
    case bearer(realm: String, service: String?, scope: String?)
    /// Send the user's name and password as `Basic`.
    case basic

    /// Reads a `WWW-Authenticate` value; nil for a scheme other than the two, or a bearer
    /// challenge without a realm.
    public init?(_ header: String) {
        let trimmed = header.drop { $0 == " " }
        let scheme = trimmed.prefix { $0 != " " }.lowercased()
        switch scheme {
        case "basic": self = .basic
        case "bearer":
            let parameters = Self.parameters(String(trimmed.dropFirst(scheme.count)))
            guard let realm = parameters["realm"], !realm.isEmpty else { return nil }
            self = .bearer(realm: realm, service: parameters["service"], scope: parameters["scope"])
        default: return nil
        }
    }

    /// `key="value"` and `key=value` pairs separated by commas; a quoted value may hold commas
    /// and `\"`.
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var index = text.startIndex
        func skip(_ characters: Set<Character>) {
            while index < text.endIndex, characters.contains(text[index]) { index = text.index(after: index) }
        }
        while index < text.endIndex {
            skip([" ", ","])
            let keyStart = index
            while index < text.endIndex, text[index] != "=", text[index] != "," { index = text.index(after: index) }
            let key = text[keyStart..<index].trimmed(where: { $0 == " " }).lowercased()
            guard index < text.endIndex, text[index] == "=" else { continue }
            index = text.index(after: index)
            var value = ""
            if index < text.endIndex, text[index] == "\"" {
                index = text.index(after: index)
                while index < text.endIndex, text[index] != "\"" {
                    if text[index] == "\\", text.index(after: index) < text.endIndex {
                        index = text.index(after: index)
                    }
                    value.append(text[index])
                    index = text.index(after: index)
                }
                if index < text.endIndex { index = text.index(after: index) }
            } else {
                let start = index
                while index < text.endIndex, text[index] != "," { index = text.index(after: index) }
                value = String(text[start..<index].trimmed(where: { $0 == " " }))
            }
            if !key.isEmpty { result[key] = value }
        }
        return result
    }

    /// Where a token is asked for: the realm with the service and the scope
    /// (`repository:NAME:pull` when the challenge names none) in its query.
    ///
    /// - Throws: `.badRequest` when the realm is no http(s) URL.
    public static func tokenURL(realm: String, service: String?, scope: String?, repository: String)
        throws(HaulError) -> RemoteURL
    {
        var query: [(name: String, value: String)] = []
        if let service { query.append(("service", service)) }
        query.append(("scope", scope ?? "repository:\(repository):pull"))
        let text =
            realm + (realm.contains("?") ? "&" : "?")
            + query.map { "\($0.name)=\(SigV4.uriEncode($0.value))" }.joined(separator: "&")
        do {
            return try RemoteURL(text)
        } catch {
            throw HaulError(.badRequest, "the registry's token realm is no URL haul can fetch: \(error.message)")
        }
    }

    /// The token in a token server's answer: `token`, else `access_token`.
    ///
    /// - Throws: `.badRequest` when the answer is not JSON or holds neither.
    public static func token(from answer: [UInt8]) throws(HaulError) -> String {
        let value: JSONValue
        do {
            value = try JSONParser.parse(answer)
        } catch {
            throw HaulError(.badRequest, "the registry's token server answered no JSON: \(error.reason)")
        }
        guard let token = value.object?["token"]?.string ?? value.object?["access_token"]?.string, !token.isEmpty,
            !token.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E })
        else { throw HaulError(.badRequest, "the registry's token server answered no token") }
        return token
    }
}

/// An OCI image layout directory (image-spec's `image-layout.md`): `oci-layout`, `index.json`
/// naming each image by its `org.opencontainers.image.ref.name`, and `blobs/sha256/HEX`.
public enum ImageLayout {
    /// The annotation that names an image in a layout's index.
    public static let refName = "org.opencontainers.image.ref.name"
    /// The `oci-layout` file's text.
    public static let marker = #"{"imageLayoutVersion":"1.0.0"}"#

    /// Where a blob goes beneath the layout: `blobs/sha256/HEX`.
    public static func blobPath(_ digest: String) -> String {
        "blobs/sha256/" + digest.dropFirst("sha256:".count)
    }

    /// The layout's `index.json` with `manifest` named `name`: every entry of `existing` (the
    /// file as it was, nil for none) kept but one of the same name, which this replaces.
    ///
    /// - Throws: `.usage` when `existing` is not an image index.
    public static func index(existing: [UInt8]?, adding manifest: OCIManifest.Descriptor, named name: String)
        throws(HaulError) -> [UInt8]
    {
        var kept: [JSONValue] = []
        if let existing {
            let value: JSONValue
            do {
                value = try JSONParser.parse(existing)
            } catch {
                throw HaulError(.usage, "the layout's index.json is not JSON: \(error.reason)")
            }
            guard let manifests = value.object?["manifests"]?.array else {
                throw HaulError(.usage, "the layout's index.json has no manifests list")
            }
            kept = manifests.filter { $0.object?["annotations"]?.object?[refName]?.string != name }
        }
        var json = JSONWriter()
        json.object { json in
            json.field("schemaVersion", Int64(2))
            json.field("mediaType", "application/vnd.oci.image.index.v1+json")
            json.key("manifests")
            json.array(kept.map(Optional.some) + [nil]) { json, entry in
                if let entry { return entry.write(to: &json) }
                json.object { json in
                    json.field("mediaType", manifest.mediaType)
                    json.field("digest", manifest.digest)
                    json.field("size", manifest.size)
                    json.field("annotations") { json in
                        json.object { json in json.field(named: refName, name) }
                    }
                }
            }
        }
        return json.bytes + [0x0A]
    }
}

/// The credentials `docker login` keeps in `config.json`: `auths` by registry, each an `auth`
/// of base64 `USER:PASSWORD` (Docker Hub's under `https://index.docker.io/v1/`). Credential
/// helpers (`credsStore`) are not run.
public enum DockerConfig {
    /// The user and password for `registry` in the file's `bytes`; nil when it has none.
    ///
    /// - Throws: `.usage` when the file is not JSON or an `auth` is not base64 `USER:PASSWORD`.
    public static func credentials(for registry: String, in bytes: [UInt8]) throws(HaulError) -> Credentials? {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw HaulError(.usage, "Docker's config.json is not JSON: \(error.reason)")
        }
        guard let auths = value.object?["auths"]?.object else { return nil }
        let names =
            registry == ImageReference.dockerHubRegistry
            ? ["https://index.docker.io/v1/", "index.docker.io", "docker.io", registry]
            : [registry, "https://\(registry)", "http://\(registry)"]
        guard let entry = names.lazy.compactMap({ auths[$0]?.object }).first, let auth = entry["auth"]?.string else {
            return nil
        }
        guard let decoded = Base64.decode(Array(auth.utf8)), let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
        else {
            throw HaulError(.usage, "Docker's config.json has an auth for \(registry) that is not base64 USER:PASSWORD")
        }
        return Credentials(
            user: String(decoding: decoded[..<colon], as: UTF8.self),
            password: String(decoding: decoded[(colon + 1)...], as: UTF8.self))
    }
}
