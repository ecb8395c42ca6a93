import ArgumentParser
import Foundation
import Haul
import HaulCore
import Logging

/// `haul get`: download one or many URLs in the foreground, resuming whatever an earlier run
/// (or a crash) left behind.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs to files, resuming where any earlier attempt stopped.",
        discussion: """
            Data goes to NAME.part and is renamed to NAME only once its length (and checksum) \
            is verified. Ctrl-C checkpoints and exits 130; the same command resumes. \
            State lives in $HAUL_HOME (default ~/.local/share/haul).
            """
    )

    @Argument(help: "http:// or https:// URLs.")
    var urls: [String] = []

    @Option(name: .shortAndLong, help: "Save to this file (one URL only). Relative to -d when given.")
    var output: String?

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Save into this directory (default: current).")
    var directory: String?

    @Option(name: .shortAndLong, help: "Read URLs from this file, one per line ('-' for stdin).")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads running at once.")
    var jobs: Int = 3

    @Option(name: [.customShort("x"), .customShort("n"), .customLong("connections")],
            help: "Connections per file (1 to 64): one file over several connections when the server allows ranges.")
    var connections: Int = 1

    @Option(name: [.customShort("k"), .customLong("min-split-size")],
            help: "Never split off a segment smaller than SIZE for another connection (K, M suffixes).")
    var minSplitSize: String = "1M"

    @Option(name: .customLong("limit-rate"), help: "At most RATE bytes per second for the whole command (K, M, G suffixes).")
    var limitRate: String?

    @Flag(name: .shortAndLong, help: "Log retries, restarts, refused connections and failed checkpoints on stderr.")
    var verbose = false

    @Option(help: "Only these bytes, inclusive: A-B or A-.")
    var range: String?

    @Option(help: "Expected digest: sha-256=HEX, sha-1=HEX or md5=HEX.")
    var checksum: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "Extra request header 'Name: value' (repeatable).")
    var headers: [String] = []

    @Option(help: "Tries without progress before giving up (an attempt that gets bytes resets the count).")
    var retries: Int = 5

    @Option(help: "Seconds without data before a connection counts as dead (and, up to 10, to connect).")
    var timeout: Double = 60

    @Option(name: .customLong("cacert"), help: "Also trust this PEM certificate authority for HTTPS (repeatable).")
    var caCertificates: [String] = []

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @Option(help: .hidden)
    var checkpointInterval: Double = 1

    @Option(help: .hidden)
    var retryDelay: Double = 0.5

    @Flag(name: .shortAndLong, help: "No progress output (errors still go to stderr).")
    var quiet = false

    @Flag(help: "Print one JSON object per event on stdout.")
    var json = false

    func validate() throws {
        if jobs < 1 { throw ValidationError("-j must be at least 1") }
        if !(1...DownloadRequest.maxConnections).contains(connections) {
            throw ValidationError("-x must be between 1 and \(DownloadRequest.maxConnections) (got \(connections))")
        }
        if let limitRate { _ = try Self.rate(limitRate) }
        _ = try Self.size(minSplitSize)
        if retries < 1 { throw ValidationError("--retries must be at least 1") }
        if timeout <= 0 { throw ValidationError("--timeout must be positive") }
        if checkpointInterval <= 0 { throw ValidationError("--checkpoint-interval must be positive") }
        for path in caCertificates where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read --cacert \(path)")
        }
    }

    func run() async throws {
        let reporter = Reporter(mode: json ? .json : quiet ? .quiet : isatty(STDERR_FILENO) != 0 ? .terminal : .plain)
        let requests = try buildRequests(reporter: reporter)
        var outcome = Outcome()
        outcome.failures = requests.failures

        var logger = Logger(label: "haul", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .critical
        let configuration = DownloadManager.Configuration(
            stateDirectory: HaulHome.path(),
            maxConcurrentDownloads: jobs,
            checkpointInterval: .milliseconds(Int64(checkpointInterval * 1000)),
            retry: RetryPolicy(maxAttempts: retries, baseDelay: .milliseconds(Int64(retryDelay * 1000))),
            http: .init(connectTimeout: .milliseconds(Int64(min(timeout, 10) * 1000)), readTimeout: .milliseconds(Int64(timeout * 1000)),
                        additionalTrustRoots: caCertificates.map(HaulHome.absolute)),
            minimumSegmentSize: try Self.size(minSplitSize),
            maxBytesPerSecond: try limitRate.map { try Self.rate($0) },
            logger: logger)
        let manager: DownloadManager
        do {
            manager = try await DownloadManager(configuration: configuration)
        } catch {
            let haulError = (error as? HaulError) ?? HaulError(.store, "cannot open state in \(configuration.stateDirectory)", cause: "\(error)")
            reporter.failure(url: nil, haulError)
            throw CommandExit(status: ExitCodes.code(for: haulError))
        }
        let interruption = Interruption(manager: manager)
        interruption.install()

        let events = manager.events()
        var waiting: [DownloadID: DownloadRecord] = [:]
        for request in requests.valid {
            do {
                let record = try await manager.add(request)
                waiting[record.id] = record
                reporter.track(record)
            } catch {
                let haulError = (error as? HaulError) ?? HaulError(.internal, "\(error)")
                reporter.failure(url: request.url.absoluteString, haulError)
                outcome.failures.append(haulError)
            }
        }

        if !waiting.isEmpty {
            for await event in events {
                reporter.handle(event)
                guard event.isFinal, waiting[event.id] != nil else { continue }
                waiting[event.id] = nil
                switch event.kind {
                case .failed(let error): outcome.failures.append(error)
                case .interrupted, .paused, .removed: outcome.interrupted = true
                default: break
                }
                if waiting.isEmpty { break }
            }
        }
        reporter.finish()
        if interruption.fired { outcome.interrupted = true }
        await manager.shutdown()
        if let status = outcome.status { throw CommandExit(status: status) }
    }

    struct Outcome {
        var failures: [HaulError] = []
        var interrupted = false

        /// The first failure decides the status; an interruption wins over everything.
        var status: Int32? {
            if interrupted { return ExitCodes.interrupted }
            return failures.first.map(ExitCodes.code(for:))
        }
    }

    /// Valid requests, and one error per unusable URL (reported already).
    func buildRequests(reporter: Reporter) throws -> (valid: [DownloadRequest], failures: [HaulError]) {
        var texts = urls
        if let inputFile { texts += try URLList.read(inputFile) }
        if texts.isEmpty {
            reporter.failure(url: nil, HaulError(.usage, "no URL to download: give at least one URL, or -i LIST"))
            throw CommandExit(status: ExitCodes.usage)
        }
        if output != nil, texts.count > 1 {
            reporter.failure(url: nil, HaulError(.usage, "-o names one file; it cannot be used with \(texts.count) URLs"))
            throw CommandExit(status: ExitCodes.usage)
        }
        let parsedRange: ByteRange?
        let parsedChecksum: Checksum?
        let headerList: HTTPHeaderList
        do {
            parsedRange = try range.map { text throws(HaulError) in
                guard let value = ByteRange(parsing: text) else { throw HaulError(.usage, "--range must look like A-B or A- (got '\(text)')") }
                return value
            }
            parsedChecksum = try checksum.map { text throws(HaulError) in try Checksum(parsing: text) }
            headerList = try parseHeaders()
        } catch {
            reporter.failure(url: nil, error)
            throw CommandExit(status: ExitCodes.usage)
        }
        let base = HaulHome.absolute(directory ?? FileManager.default.currentDirectoryPath)
        var valid: [DownloadRequest] = []
        var failures: [HaulError] = []
        for text in texts {
            do {
                let url = try RemoteURL(text)
                let destination: DownloadRequest.Destination = output.map {
                    .file($0.hasPrefix("/") ? $0 : base + "/" + $0)
                } ?? .directory(base)
                valid.append(try DownloadRequest(url: url, destination: destination, range: parsedRange,
                                                 checksum: parsedChecksum, headers: headerList, maxAttempts: retries,
                                                 connections: connections))
            } catch {
                reporter.failure(url: nil, error)
                failures.append(error)
            }
        }
        return (valid, failures)
    }

    static func rate(_ text: String) throws -> Int64 {
        do {
            return try ByteRate(parsing: text).bytesPerSecond
        } catch {
            throw ValidationError("--limit-rate: \(error.message)")
        }
    }

    static func size(_ text: String) throws -> Int64 {
        guard let size = try? ByteRate(parsing: text).bytesPerSecond else {
            throw ValidationError("-k must be a size such as 512K or 1M (got '\(text)')")
        }
        return size
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

/// Ctrl-C and SIGTERM: checkpoint every running download, then let `run` exit 130.
final class Interruption: @unchecked Sendable {
    let manager: DownloadManager
    private var sources: [DispatchSourceSignal] = []
    private let lock = NSLock()
    private var didFire = false

    init(manager: DownloadManager) {
        self.manager = manager
    }

    var fired: Bool { lock.withLock { didFire } }

    func install() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let first = lock.withLock { () -> Bool in
                    defer { didFire = true }
                    return !didFire
                }
                guard first else { return }
                Task { await self.manager.shutdown() }
            }
            source.resume()
            sources.append(source)
        }
    }
}
