import ArgumentParser
import Haul
import HaulCore
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `haul get`'s options for names of content: where an `s3://` name's store is and how it is
/// addressed, and whether its requests are signed. The keys and the region come from where the
/// AWS tools find them (`AWSProfiles`), never from the command line.
struct ContentSourceOptions: ParsableArguments {
    @Option(
        name: .customLong("s3-endpoint"),
        help: ArgumentHelp(
            "The S3-compatible store s3:// names are fetched from (MinIO, R2, ...; default: AWS).", valueName: "URL"))
    var s3Endpoint: String?

    @Flag(
        name: .customLong("s3-path-style"),
        help:
            "Ask for s3://BUCKET/KEY as ENDPOINT/BUCKET/KEY rather than BUCKET.ENDPOINT/KEY (an IP endpoint implies it)."
    )
    var s3PathStyle = false

    @Flag(
        name: .customLong("no-sign-request"),
        help: "Send s3:// requests unsigned (a public bucket), even where AWS keys are found.")
    var noSignRequest = false

    @Option(
        name: .customLong("platform"),
        help: ArgumentHelp(
            "The platform an oci:// image index is narrowed to (default: this machine's).",
            valueName: "OS/ARCH[/VARIANT]"))
    var platform: String?

    @Flag(name: .customLong("plain-http"), help: "Reach oci:// registries over HTTP without TLS.")
    var plainHTTP = false

    @Option(
        name: .customLong("oci-auth"),
        help: ArgumentHelp(
            "The user name and password for the oci:// registry (else Docker's config.json credentials).",
            valueName: "USER:PASSWORD"))
    var ociAuth: String?

    @Option(
        name: .customLong("include"),
        help: ArgumentHelp(
            "Only the hf:// files whose path matches PATTERN (repeatable; * crosses /).", valueName: "PATTERN"))
    var include: [String] = []

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp("Not the hf:// files whose path matches PATTERN (repeatable).", valueName: "PATTERN"))
    var exclude: [String] = []

    @Option(
        name: .customLong("hf-token-file"),
        help: ArgumentHelp("Read the Hugging Face token from FILE (else HF_TOKEN).", valueName: "FILE"))
    var hfTokenFile: String?

    @Option(
        name: .customLong("hf-cache"),
        help: ArgumentHelp(
            "Write hf:// files in huggingface_hub's cache layout in DIR (as HF_HUB_CACHE), instead of the tree under -d.",
            valueName: "DIR"))
    var hfCache: String?

    /// Where the Hub is and how it is asked: `HF_ENDPOINT`, the token (`--hf-token-file`, else
    /// `HF_TOKEN`), the globs, the cache.
    func hubSettings(environment: [String: String]) throws(HaulError) -> ContentResolver.HubSettings {
        var settings = try ContentResolver.HubSettings.from(environment: environment)
        if let hfTokenFile {
            guard let data = FileManager.default.contents(atPath: hfTokenFile) else {
                throw HaulError(.usage, "cannot read --hf-token-file \(hfTokenFile)")
            }
            let token = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
            guard !token.isEmpty else { throw HaulError(.usage, "--hf-token-file \(hfTokenFile) is empty") }
            settings.token = token
        }
        settings.include = include
        settings.exclude = exclude
        settings.cache = hfCache != nil
        return settings
    }

    /// How registries are reached, for the image names among `names`: `--oci-auth` for their
    /// registries, else the credentials of Docker's `config.json` (`$DOCKER_CONFIG`, else
    /// `~/.docker`).
    func ociSettings(for names: [ContentName], environment: [String: String]) throws(HaulError)
        -> ContentResolver.OCISettings
    {
        var settings = ContentResolver.OCISettings.standard
        settings.plainHTTP = plainHTTP
        if let platform { settings.platform = try OCIManifest.Platform(parsing: platform) }
        let registries = names.compactMap { name -> String? in
            if case .image(let image) = name { image.registry } else { nil }
        }
        if let ociAuth {
            guard let colon = ociAuth.firstIndex(of: ":") else {
                throw HaulError(.usage, "--oci-auth takes USER:PASSWORD")
            }
            let given = Credentials(
                user: String(ociAuth[..<colon]), password: String(ociAuth[ociAuth.index(after: colon)...]))
            for registry in registries { settings.credentials[registry] = given }
            return settings
        }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        let path =
            (environment["DOCKER_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.docker") + "/config.json"
        guard !registries.isEmpty, FileManager.default.fileExists(atPath: path) else { return settings }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HaulError(.usage, "cannot read Docker's credentials in \(path)")
        }
        for registry in registries {
            if let found = try DockerConfig.credentials(for: registry, in: Array(data)) {
                settings.credentials[registry] = found
            }
        }
        return settings
    }

    /// The store's endpoint as given.
    func endpoint() throws(HaulError) -> S3Endpoint {
        guard let s3Endpoint else { return S3Endpoint(custom: nil, pathStyle: s3PathStyle) }
        let url: RemoteURL
        do {
            url = try RemoteURL(s3Endpoint)
        } catch {
            throw HaulError(.usage, "--s3-endpoint: \(error.message)")
        }
        guard url.path == "/", url.credentials == nil, !s3Endpoint.contains("?") else {
            throw HaulError(.usage, "--s3-endpoint takes a scheme, a host and a port only (got \(url.absoluteString))")
        }
        return S3Endpoint(custom: url, pathStyle: s3PathStyle)
    }

    /// The keys and region the AWS tools would use here: the environment, then
    /// `AWS_SHARED_CREDENTIALS_FILE` (else `~/.aws/credentials`) and `AWS_CONFIG_FILE` (else
    /// `~/.aws/config`).
    func profiles(environment: [String: String]) throws(HaulError) -> AWSProfiles {
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        func file(_ variable: String, _ fallback: String) throws(HaulError) -> String? {
            let path = environment[variable].flatMap { $0.isEmpty ? nil : $0 } ?? (home + "/.aws/" + fallback)
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HaulError(.usage, "cannot read the AWS file \(path)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        var found = try AWSProfiles(
            environment: environment, credentialsFile: try file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            configFile: try file("AWS_CONFIG_FILE", "config"))
        if noSignRequest { found.credentials = nil }
        return found
    }
}

extension GetCommand {
    /// The AWS keys the engine signs `s3://` objects' requests with, read only when an argument
    /// is such a name; a bad setting reported and the command ended (exit 2).
    func awsCredentials(reporter: Reporter) throws -> SigV4.Credentials? {
        guard urls.contains(where: { $0.lowercased().hasPrefix("s3://") }) else { return nil }
        do throws(HaulError) {
            return try content.profiles(environment: ProcessInfo.processInfo.environment).credentials
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }
    }

    /// What the names of content among the arguments expand to (`ContentExpansion`, as the
    /// daemon's: the files to fetch, those in place with their digests left out unless `-o`
    /// names the one file, and the group whose finish the queue writes once they are in); the
    /// names' problems reported and the command ended (exit 2 for a name or a setting, 3 for a
    /// refusal, 4 when nothing answers).
    func expandContent(
        _ names: [(text: String, name: ContentName)], into base: String, http: AsyncHTTPTransport.Configuration,
        reporter: Reporter
    ) async throws -> [ContentExpansion] {
        guard !names.isEmpty else { return [] }
        var expansions: [ContentExpansion] = []
        do throws(HaulError) {
            let environment = ProcessInfo.processInfo.environment
            let hasS3 = names.contains { if case .s3 = $0.name { true } else { false } }
            let region = hasS3 ? try content.profiles(environment: environment).region : nil
            let resolver = ContentResolver(
                s3Endpoint: try content.endpoint(), s3Region: region ?? "us-east-1", http: http,
                oci: try content.ociSettings(for: names.map(\.name), environment: environment),
                hub: try content.hubSettings(environment: environment))
            let now = Int64(Date().timeIntervalSince1970)
            for (text, name) in names {
                let expansion = try await ContentExpansion.expand(
                    try await resolver.resolve(name, as: text), name: text, into: base, namesOneFile: output != nil,
                    createdAt: now)
                for entry in expansion.skipped { reporter.failure(url: text, HaulError(.usage, entry.message)) }
                expansions.append(expansion)
            }
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }
        return expansions
    }
}
