import ArgumentParser
import Haul
import HaulAPI
import HaulCore
import HaulStore
import Logging

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

/// `haul get`: download one or many URLs in the foreground, resuming whatever an earlier run
/// (or a crash) left behind.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs to files, resuming where any earlier attempt stopped.",
        discussion: """
            Data goes to NAME.part and is renamed to NAME only once its length (and checksum, \
            else the digest the server sends: Repr-Digest, Digest) is verified. Ctrl-C checkpoints and exits 130; the same command resumes. \
            State lives in $HAUL_HOME (default ~/.local/share/haul).
            """
    )

    @Argument(help: "http:// or https:// URLs (or Metalink files, NAME.meta4 or NAME.metalink).")
    var urls: [String] = []

    @Option(name: .shortAndLong, help: "Save to this file (one URL only). Relative to -d when given.")
    var output: String?

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Save into this directory (default: current).")
    var directory: String?

    @Flag(
        help:
            "The URLs given are mirrors of one file: it takes bytes from all of them, each checked against the others.")
    var mirrors = false

    @Option(
        name: .shortAndLong,
        help:
            """
            Read URLs from this file, one per line ('-' for stdin); several tab-separated URLs on a line are \
            mirrors of one file.
            """
    )
    var inputFile: String?

    @Option(
        help: ArgumentHelp(
            """
            Download the files of this Metalink (v4 or v3), a local file or an http(s) URL fetched with the \
            options below (a FILE.meta4 or FILE.metalink argument works too): each from all its URLs, checked by \
            its digest.
            """,
            valueName: "FILE|URL"))
    var metalink: [String] = []

    @OptionGroup var engine: EngineOptions<GetCommand>
    var jobs: Int { engine.jobs ?? 3 }
    var connections: Int? { engine.connections }

    /// Where a download starts when `-x` is absent (it grows from there).
    static let defaultConnections = 4

    @Option(
        name: [.customShort("k"), .customLong("min-split-size")],
        help: "Never split off a segment smaller than SIZE for another connection (K, M suffixes).")
    var minSplitSize: String = "1M"

    @Flag(
        name: .shortAndLong,
        help:
            """
            Log retries, restarts, refused connections and failed checkpoints on stderr, and the requests, \
            connections and TLS handshakes each download took.
            """
    )
    var verbose = false

    @Option(help: "Only these bytes, inclusive: A-B or A-.")
    var range: String?

    @Flag(
        help:
            """
            Read in order, to use the file while it downloads: the first and last -k bytes first, then every \
            connection just ahead of the first missing byte (at most 4 x -x x -k ahead).
            """)
    var sequential = false

    @Option(
        help:
            """
            Expected digest: sha-256=HEX, sha-512=HEX, sha-1=HEX or md5=HEX. Checked instead of the server's \
            Repr-Digest/Digest.
            """
    )
    var checksum: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "Extra request header 'Name: value' (repeatable).")
    var headers: [String] = []

    @Option(help: "Tries without progress before giving up (an attempt that keeps new bytes resets the count).")
    var retries: Int = 5

    @Option(help: "Seconds without data before a connection counts as dead (and, up to 10, to connect).")
    var timeout: Double = 60

    @Option(
        name: .customLong("speed-limit"),
        help: ArgumentHelp(
            """
            A connection slower than BYTES per second (K, M suffixes) for --speed-time seconds counts as a failed \
            attempt; 0 turns it off.
            """,
            valueName: "BYTES"))
    var speedLimit: String = "1K"

    @Option(
        name: .customLong("speed-time"),
        help: ArgumentHelp("Seconds a connection may stay under --speed-limit.", valueName: "SECONDS"))
    var speedTime: Double = 60

    @Option(
        name: .customLong("retry-max-wait"),
        help: ArgumentHelp(
            "The longest Retry-After to wait for; a server that asks for more fails the download at once.",
            valueName: "SECONDS"))
    var retryMaxWait: Double = 60

    @Option(name: .customLong("cacert"), help: "Also trust this PEM certificate authority for HTTPS (repeatable).")
    var caCertificates: [String] = []

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @OptionGroup(title: "Timestamps")
    var timestamps: TimestampOptions

    @OptionGroup(title: "Cookies")
    var cookieOptions: CookieOptions

    @OptionGroup(title: "S3")
    var content: ContentSourceOptions

    @OptionGroup(title: "Configuration file")
    var config: ConfigOptions

    @OptionGroup(title: "HTTP version")
    var httpVersion: HTTPVersionOptions

    var checkpointInterval: Double = 1

    @Option(help: .hidden)
    var retryDelay: Double = 0.5

    @Flag(name: .shortAndLong, help: "No progress output (errors still go to stderr).")
    var quiet = false

    @Flag(help: "Print one JSON object per event on stdout.")
    var json = false

    func validate() throws {
        _ = try Self.size(minSplitSize)
        if retries < 1 { throw ValidationError("--retries must be at least 1") }
        if timeout <= 0 { throw ValidationError("--timeout must be positive") }
        _ = try Self.speed(speedLimit)
        if !(speedTime > 0 && speedTime <= 86_400) {
            throw ValidationError("--speed-time must be more than 0 and at most 86400 seconds (got \(speedTime))")
        }
        if !(retryMaxWait >= 0 && retryMaxWait <= 86_400 * 365) {
            throw ValidationError("--retry-max-wait must be between 0 and 31536000 seconds (got \(retryMaxWait))")
        }
        if content.hfCache != nil, directory != nil {
            throw ValidationError("--hf-cache is where hf:// files go; it cannot be used with -d")
        }
        if timestamps.timestamping, range != nil {
            throw ValidationError("-N compares whole files; it cannot be used with --range")
        }
        for path in caCertificates where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read --cacert \(path)")
        }
    }

    func run() async throws {
        let reporter = Reporter(
            mode: json ? .json : quiet ? .quiet : isatty(STDERR_FILENO) != 0 ? .terminal : .plain,
            verbose: verbose)
        let template = try requestTemplate(reporter: reporter)
        let proxies: ProxySettings
        do {
            proxies = try network.proxySettings(environment: ProcessInfo.processInfo.environment)
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.usage)
        }
        let cookies: CookieStore?
        do {
            cookies = try cookieOptions.store()
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }

        var logger = Logger(label: "haul", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .critical
        var configuration = DownloadManager.Configuration(
            stateDirectory: HaulHome.path(),
            maxConcurrentDownloads: jobs,
            checkpointInterval: engine.checkpoint,
            retry: RetryPolicy(
                maxAttempts: retries, baseDelay: .milliseconds(Int64(retryDelay * 1000)),
                maxRetryAfter: .milliseconds(Int64(retryMaxWait * 1000)), waitsForLongRetryAfter: false,
                speedLimit: try Self.speed(speedLimit), speedTime: .milliseconds(Int64(speedTime * 1000))),
            http: .init(
                connectTimeout: .milliseconds(Int64(min(timeout, 10) * 1000)),
                readTimeout: .milliseconds(Int64(timeout * 1000)),
                additionalTrustRoots: caCertificates.map(HaulHome.absolute), proxies: proxies,
                userAgent: network.userAgent ?? HaulVersion.userAgent, cookies: cookies),
            minimumSegmentSize: try Self.size(minSplitSize),
            maxBytesPerSecond: try engine.maxBytesPerSecond(),
            logger: logger, maxConnectionsPerHost: engine.maxConnectionsPerHost, httpVersions: httpVersion.policy)
        configuration.refreshCommand = engine.refreshCommand
        configuration.contentStore = engine.store
        // Small files far away cost their requests' round trips side by side (`SlotProbes`).
        configuration.sendsPastLimit = true
        do {
            try engine.store?.prepare()
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(ExitCodes.code(for: error))
        }
        if let bootId = engine.bootId { configuration.bootID = bootId }
        configuration.http.awsCredentials = try awsCredentials(reporter: reporter)
        // After the transport's settings: a `--metalink URL` is fetched with them.
        let (entries, groups) = try await entries(
            reporter: reporter,
            metalinks: MetalinkFetcher(
                http: configuration.http, headers: template.headers, credentials: template.credentials,
                httpVersions: httpVersion.policy, logger: logger), http: configuration.http)
        if engine.jobs == nil {
            // A name of content's files are on one host: all at once (up to `contentJobs`), not
            // three and then a lone last one that grows alone (content-bench.py, 1 GiB in four
            // shards from the Hub: 13.5 s through the relay at -j 3, 9.5 s at -j 4; 1.73 s and
            // 1.47 s on loopback).
            let resolved = entries.count { if case .resolved = $0 { true } else { false } }
            configuration.maxConcurrentDownloads = max(jobs, min(resolved, Self.contentJobs))
        }
        let outcome: Outcome
        do {
            // Shut down once the drive returns: its runs checkpointed, the store closed.
            outcome = try await DownloadManager.withManager(configuration: configuration) { manager in
                await drive(manager, entries: entries, groups: groups, template: template, reporter: reporter)
            }
        } catch {
            // The drive throws nothing: this is the manager's start (its state, its store).
            let haulError =
                (error as? HaulError)
                ?? HaulError(.store, "cannot open state in \(configuration.stateDirectory)", underlying: error)
            reporter.failure(url: nil, haulError)
            throw ExitCode(ExitCodes.code(for: haulError))
        }
        do {
            try cookieOptions.save(cookies)
        } catch {
            reporter.failure(url: nil, error)
            throw ExitCode(outcome.status ?? ExitCodes.code(for: error))
        }
        if let status = outcome.status { throw ExitCode(status) }
    }

    static func rate(_ text: String) throws -> Int64 {
        do {
            return try ByteRate(parsing: text).bytesPerSecond
        } catch {
            throw ValidationError("--limit-rate: \(error.message)")
        }
    }

    static func speed(_ text: String) throws -> Int64 {
        if text == "0" { return 0 }
        do {
            return try ByteRate(parsing: text).bytesPerSecond
        } catch {
            throw ValidationError("--speed-limit: \(error.message); 0 turns the rule off")
        }
    }

    static func size(_ text: String) throws -> Int64 {
        do {
            return try ByteRate(parsing: text).bytesPerSecond
        } catch {
            throw ValidationError("-k must be a size such as 512K or 1M (got '\(text)': \(error.message))")
        }
    }
}

extension GetCommand: EngineOptionsRole {
    /// Downloads at once for the files of names of content when `-j` is not given: as many as
    /// there are, up to this.
    static let contentJobs = 8

    static let jobsHelp = ArgumentHelp(
        """
        Downloads transferring at once (1 to 1000, default 3; for the files of hf://, oci:// and s3:// names, as \
        many as there are, up to 8). One whose bytes are all in lets the next start while it is verified and \
        published (at most max(N, 16) such at once). Files that may be small are also sent past N (16 per \
        HTTP/1.1 host, or --max-connections-per-host; 100 per HTTP/2 host); one that brings over 1 MiB waits for a \
        slot.
        """
    )
    static let connectionsNames: NameSpecification = [.customShort("x"), .customShort("n"), .customLong("connections")]
    static let connectionsHelp = ArgumentHelp(
        """
        Connections per file (1 to 64), a fixed count: one file over several connections when the server allows \
        ranges, fewer for a small file or a server that refuses some. Default: 4, then more (up to 16) while each \
        step raises the download's speed by 10 % or more.
        """,
        valueName: "N")
    static let connectionsPerHostHelp = ArgumentHelp(
        """
        At most N connections to one host at once, shared fairly by every download to it (1 to 1024; default: \
        each download's -x). A host that refuses a connection (429, 503) gets fewer for a while either way.
        """,
        valueName: "N")
    static let limitRateHelp = ArgumentHelp(
        "At most RATE bytes per second for the whole command (K, M, G suffixes).", valueName: "RATE")
    static let refreshCommandHelp = ArgumentHelp(
        """
        When a URL expires midway (401/403/410 or a redirect to a web page), run CMD with sh -c for a new one \
        (HAUL_URL, HAUL_ID, HAUL_PATH in its environment; it prints the URL). The bytes are kept.
        """,
        valueName: "CMD")
}
