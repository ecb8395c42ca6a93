import HaulCore
import Testing

/// The pure parts of `oci://`: manifests and indexes as the image spec writes them, the
/// platform an index is narrowed to, the registry's challenge and token, the layout's
/// `index.json`, and Docker's `config.json` credentials.
@Suite(.timeLimit(.minutes(1))) struct OCIPartsTests {
    static let digestA = "sha256:" + String(repeating: "a", count: 64)
    static let digestB = "sha256:" + String(repeating: "b", count: 64)

    @Test func anIndexAndItsPlatforms() throws {
        // The image spec's own example of an index (image-index.md), shortened.
        let index = try OCIManifest.parse(
            Array(
                """
                {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
                  {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7143, "digest": "\(Self.digestA)",
                   "platform": {"architecture": "ppc64le", "os": "linux"}},
                  {"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7682, "digest": "\(Self.digestB)",
                   "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}]}
                """.utf8), mediaType: nil)
        guard case .index(let entries) = index else {
            Issue.record("not an index")
            return
        }
        #expect(entries.count == 2)
        #expect(OCIManifest.entry(for: try .init(parsing: "linux/arm64"), in: entries)?.digest == Self.digestB)
        #expect(OCIManifest.entry(for: try .init(parsing: "linux/arm64/v8"), in: entries)?.digest == Self.digestB)
        #expect(OCIManifest.entry(for: try .init(parsing: "linux/arm64/v7"), in: entries) == nil)
        #expect(OCIManifest.entry(for: try .init(parsing: "linux/amd64"), in: entries) == nil)
        #expect(OCIManifest.entry(for: try .init(parsing: "linux/ppc64le"), in: entries)?.size == 7143)
        #expect(throws: HaulError.self) { try OCIManifest.Platform(parsing: "linux") }
        #expect(throws: HaulError.self) { try OCIManifest.Platform(parsing: "linux//v8") }
    }

    @Test func anImageManifestItsConfigAndLayers() throws {
        let image = try OCIManifest.parse(
            Array(
                """
                {"schemaVersion": 2, "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                 "size": 1469, "digest": "\(Self.digestA)"}, "layers": [{"mediaType":
                 "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 3370706, "digest": "\(Self.digestB)"}]}
                """.utf8), mediaType: "application/vnd.docker.distribution.manifest.v2+json")
        guard case .image(let config, let layers) = image else {
            Issue.record("not an image")
            return
        }
        #expect(config.size == 1469)
        #expect(layers.map(\.digest) == [Self.digestB])
        #expect(layers[0].checksum == Checksum(algorithm: .sha256, hex: String(repeating: "b", count: 64)))
        #expect(throws: HaulError.self) { try OCIManifest.parse(Array("{\"layers\": []}".utf8), mediaType: nil) }
        #expect(throws: HaulError.self) {
            try OCIManifest.parse(
                Array(#"{"config": {"mediaType": "x", "size": 1, "digest": "md5:00"}, "layers": []}"#.utf8),
                mediaType: nil)
        }
        #expect(throws: HaulError.self) { try OCIManifest.parse(Array("not json".utf8), mediaType: nil) }
    }

    @Test func theChallengeAndTheToken() throws {
        // Docker Hub's challenge, as the distribution spec's token flow shows it.
        let challenge = RegistryChallenge(
            #"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull,push""#
        )
        #expect(
            challenge
                == .bearer(
                    realm: "https://auth.docker.io/token", service: "registry.docker.io",
                    scope: "repository:samalba/my-app:pull,push"))
        #expect(RegistryChallenge(#"Basic realm="Registry Realm""#) == .basic)
        #expect(RegistryChallenge("Negotiate abc") == nil)
        #expect(RegistryChallenge(#"Bearer service="x""#) == nil, "no realm")
        let url = try RegistryChallenge.tokenURL(
            realm: "https://auth.docker.io/token", service: "registry.docker.io", scope: nil,
            repository: "library/ubuntu")
        #expect(
            url.absoluteString
                == "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fubuntu%3Apull")
        #expect(try RegistryChallenge.token(from: Array(#"{"token": "abc.def", "expires_in": 300}"#.utf8)) == "abc.def")
        #expect(try RegistryChallenge.token(from: Array(#"{"access_token": "xyz"}"#.utf8)) == "xyz")
        #expect(throws: HaulError.self) { try RegistryChallenge.token(from: Array(#"{"token": "a\nb"}"#.utf8)) }
        #expect(throws: HaulError.self) { try RegistryChallenge.token(from: Array("{}".utf8)) }
    }

    @Test func theLayoutsIndexKeepsOtherImagesAndReplacesItsName() throws {
        let first = OCIManifest.Descriptor(
            mediaType: "application/vnd.oci.image.manifest.v1+json", digest: Self.digestA, size: 10)
        let second = OCIManifest.Descriptor(
            mediaType: "application/vnd.oci.image.manifest.v1+json", digest: Self.digestB, size: 20)
        let one = try ImageLayout.index(existing: nil, adding: first, named: "v1")
        let two = try ImageLayout.index(existing: one, adding: second, named: "latest")
        let again = try ImageLayout.index(existing: two, adding: second, named: "v1")
        func names(_ bytes: [UInt8]) throws -> [String: String] {
            var found: [String: String] = [:]
            for entry in try JSONParser.parse(bytes).object?["manifests"]?.array ?? [] {
                let name = entry.object?["annotations"]?.object?[ImageLayout.refName]?.string ?? ""
                found[name] = entry.object?["digest"]?.string
            }
            return found
        }
        #expect(try names(two) == ["v1": Self.digestA, "latest": Self.digestB])
        #expect(try names(again) == ["v1": Self.digestB, "latest": Self.digestB], "v1 replaced, latest kept")
        #expect(ImageLayout.blobPath(Self.digestA) == "blobs/sha256/" + String(repeating: "a", count: 64))
        #expect(throws: HaulError.self) { try ImageLayout.index(existing: Array("[]".utf8), adding: first, named: "x") }
    }

    @Test func dockersConfigCredentials() throws {
        // base64("user:pa:ss")
        let config = Array(
            #"{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYTpzcw=="}, "ghcr.io": {"auth": "YTpi"}}}"#
                .utf8)
        #expect(
            try DockerConfig.credentials(for: "registry-1.docker.io", in: config)
                == Credentials(user: "user", password: "pa:ss"))
        #expect(try DockerConfig.credentials(for: "ghcr.io", in: config) == Credentials(user: "a", password: "b"))
        #expect(try DockerConfig.credentials(for: "quay.io", in: config) == nil)
        #expect(throws: HaulError.self) {
            try DockerConfig.credentials(
                for: "ghcr.io", in: Array(#"{"auths": {"ghcr.io": {"auth": "bm9jb2xvbg=="}}}"#.utf8))
        }
    }
}
