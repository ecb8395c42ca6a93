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
    /// The files the names of content among the arguments stand for, each an entry; the names'
    /// problems reported and the command ended (exit 2 for a name or a setting, 3 for the store's
    /// refusal, 4 when it cannot be reached).
    func resolveContent(
        _ names: [(text: String, name: ContentName)], http: AsyncHTTPTransport.Configuration, reporter: Reporter
    ) async throws -> [Entry] {
        guard !names.isEmpty else { return [] }
        var entries: [Entry] = []
        do throws(HaulError) {
            let resolver = ContentResolver(
                s3Endpoint: try content.endpoint(),
                s3Region: try content.profiles(environment: ProcessInfo.processInfo.environment).region ?? "us-east-1",
                http: http)
            for (text, name) in names {
                let (files, skipped) = try await resolver.resolve(name, as: text)
                for key in skipped {
                    reporter.failure(
                        url: text, HaulError(.usage, "skipped the key '\(key)': it names no file beneath the directory")
                    )
                }
                entries += files.map(Entry.resolved)
            }
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }
        return entries
    }
}
