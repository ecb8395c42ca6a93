import ArgumentParser
import Haul
import HaulCore
import NIOConcurrencyHelpers

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `haul get` was asked to download: URLs (several on one line are mirrors of one file)
/// and the files of Metalink documents (local, or fetched by `MetalinkFetcher`); and the
/// request each becomes, added to the manager in batches.
extension GetCommand {
    enum Entry: Sendable {
        /// One URL, or several separated by tabs (`--mirrors`, aria2's input files): one file,
        /// the URLs after the first its mirrors.
        case urls(String)
        /// One file of a Metalink: its URLs in order of preference, its digest and its name.
        case metalinkFile(Metalink.File)
        /// One file a name of content (`s3://`) stands for: its URL, its path beneath the
        /// directory, what it is checked against and how its requests are signed.
        case resolved(ResolvedFile)
    }

    /// Every entry given, from the arguments, `-i` and `--metalink` (a file, or an http(s) URL
    /// that `metalinks` fetches), and the groups of the names of content among them: each a
    /// `GroupAsk` whose offsets are its files' entries (side by side, so no batch splits them).
    func entries(
        reporter: Reporter, metalinks fetcher: MetalinkFetcher, http: AsyncHTTPTransport.Configuration
    ) async throws -> (entries: [Entry], groups: [DownloadQueue.GroupAsk]) {
        var entries: [Entry] = []
        var texts: [String] = []
        var metalinks = metalink
        var names: [(text: String, name: ContentName)] = []
        for argument in urls {
            if Self.isMetalinkFile(argument) {
                metalinks.append(argument)
            } else if let name = try Self.contentName(argument, reporter: reporter) {
                names.append((argument, name))
            } else {
                texts.append(argument)
            }
        }
        if mirrors, !texts.isEmpty { texts = [texts.joined(separator: "\t")] }
        if let inputFile { texts += try URLList.read(inputFile) }
        entries = texts.map(Entry.urls)
        var groups: [DownloadQueue.GroupAsk] = []
        for expansion in try await expandContent(names, into: baseDirectory, http: http, reporter: reporter) {
            groups.append(.init(expansion.group, offsets: entries.count..<entries.count + expansion.files.count))
            entries += expansion.files.map(Entry.resolved)
        }
        for source in metalinks {
            do throws(HaulError) {
                let document =
                    MetalinkFetcher.isURL(source) ? try await fetcher.fetch(source) : try Self.readMetalink(source)
                entries += document.files.map(Entry.metalinkFile)
            } catch {
                reporter.failure(url: nil, error)
                throw ExitCode(ExitCodes.code(for: error))
            }
        }
        if entries.isEmpty, names.isEmpty {
            reporter.failure(url: nil, HaulError(.usage, "no URL to download: give at least one URL, or -i LIST"))
            throw ExitCode(ExitCodes.usage)
        }
        if output != nil, entries.count > 1 {
            reporter.failure(
                url: nil, HaulError(.usage, "-o names one file; it cannot be used with \(entries.count) files"))
            throw ExitCode(ExitCodes.usage)
        }
        return (entries, groups)
    }

    /// The name of content `argument` is (`s3://`, `hf://`, `oci://`), nil for any other
    /// argument; a bad name reported and the command ended with exit 2.
    static func contentName(_ argument: String, reporter: Reporter) throws -> ContentName? {
        do throws(HaulError) {
            return try ContentName(parsing: argument)
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }
    }

    /// Where files go: `-d`, else the current directory, absolute.
    var baseDirectory: String {
        HaulHome.absolute(content.hfCache ?? directory ?? FileManager.default.currentDirectoryPath)
    }

    /// A local file named like a Metalink, not a URL.
    static func isMetalinkFile(_ argument: String) -> Bool {
        let lower = argument.lowercased()
        return !lower.contains("://") && (lower.hasSuffix(".meta4") || lower.hasSuffix(".metalink"))
    }

    static func readMetalink(_ path: String) throws(HaulError) -> Metalink {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HaulError(.usage, "cannot read the Metalink \(path)")
        }
        guard data.count <= Metalink.maxBytes else {
            throw HaulError(.usage, "\(path): larger than \(Metalink.maxBytes >> 20) MiB, not a Metalink")
        }
        do {
            return try Metalink.parse(String(decoding: data, as: UTF8.self))
        } catch {
            throw HaulError(.usage, "\(path): \(error.message)")
        }
    }
}

extension GetCommand {
    /// What every request of this command shares; `request(for:)` adds the URL.
    struct RequestTemplate: Sendable {
        var base: String
        var output: String?
        var range: ByteRange?
        var checksum: Checksum?
        var headers: HTTPHeaderList
        var retries: Int
        /// `-x`; nil: none named, the download finds its count (`ConnectionGrowth`).
        var connections: Int?
        /// Per URL: its own `user:password@`, else `--user`, else netrc. Kept in memory only.
        var credentials: CredentialSources
        var timestamps = TimestampOptions()
        /// `--sequential`.
        var sequential = false
    }

    func requestTemplate(reporter: Reporter) throws -> RequestTemplate {
        do {
            let parsedRange = try range.map { text throws(HaulError) in
                guard let value = ByteRange(parsing: text) else {
                    throw HaulError(.usage, "--range must look like A-B or A- (got '\(text)')")
                }
                return value
            }
            return RequestTemplate(
                base: baseDirectory, output: output,
                range: parsedRange,
                checksum: try checksum.map { text throws(HaulError) in try Checksum(parsing: text) },
                headers: try parseHeaders(), retries: retries, connections: connections,
                credentials: try network.credentialSources(), timestamps: timestamps, sequential: sequential)
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.usage)
        }
    }

    func parseHeaders() throws(HaulError) -> HTTPHeaderList {
        var list = HTTPHeaderList()
        for header in headers {
            let field = try HTTPHeaderList.field(parsing: header)
            list.add(name: field.name, value: field.value)
        }
        return list
    }
}

extension GetCommand.RequestTemplate {
    func request(for entry: GetCommand.Entry) throws(HaulError) -> DownloadRequest {
        switch entry {
        case .urls(let text):
            let fields = text.split(separator: "\t").map { String($0.trimmed()) }.filter {
                !$0.isEmpty
            }
            let url = try RemoteURL(fields.first ?? text)
            var mirrors: [RemoteURL] = []
            for field in fields.dropFirst() { mirrors.append(try RemoteURL(field)) }
            return try request(url: url, mirrors: mirrors, name: nil, checksum: checksum)
        case .metalinkFile(let file):
            // `--checksum` wins over the document's digest.
            var request = try request(
                url: file.urls[0], mirrors: Array(file.urls.dropFirst()), name: file.name,
                checksum: checksum ?? file.checksums.first)
            request.pieceHashes = file.pieces
            return request
        case .resolved(let file):
            var request = try request(url: file.url, mirrors: [], name: file.path, checksum: checksum)
            request.take(file, userChecksum: checksum != nil)
            return request
        }
    }

    func request(url: RemoteURL, mirrors: [RemoteURL], name: String?, checksum: Checksum?) throws(HaulError)
        -> DownloadRequest
    {
        let destination: DownloadRequest.Destination
        if let output {
            destination = .file(output.hasPrefix("/") ? output : base + "/" + output)
        } else if let name {
            destination = .file(base + "/" + name)
        } else {
            destination = .directory(base)
        }
        var request = try DownloadRequest(
            url: url, destination: destination, range: range, checksum: checksum,
            headers: headers, maxAttempts: retries,
            connections: connections ?? GetCommand.defaultConnections,
            credentials: credentials.credentials(for: url), mirrors: mirrors)
        request.growsConnections = connections == nil
        request.sequential = sequential
        request.timestamping = timestamps.timestamping
        request.remoteTime = timestamps.remoteTime || timestamps.timestamping
        return request
    }
}
