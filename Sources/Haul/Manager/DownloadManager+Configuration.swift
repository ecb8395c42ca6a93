import CoreMetrics
import HaulCore
import Logging

extension DownloadManager {
    /// What a manager is built with: where its state lives, its limits and timings, and how it
    /// reaches servers. The manager keeps the value it was made with (`configuration`); its
    /// setters (`setMaxConcurrentDownloads(_:)`, `setMaxBytesPerSecond(_:)`) change the limits in
    /// force, not this value.
    public struct Configuration: Sendable {
        /// Where the SQLite store lives (`haul.sqlite` inside).
        public var stateDirectory: String
        /// How many downloads run at once at the start (3 by default; under 1 counts as 1).
        public var maxConcurrentDownloads: Int
        /// How often, while bytes flow, data is fsynced and the offset committed: the most a
        /// crash can cost (DESIGN rule 2).
        public var checkpointInterval: Duration
        /// How often progress events are emitted per download.
        public var progressInterval: Duration
        /// How many tries a download gets and how long it waits between them, unless its
        /// request names its own number of tries.
        public var retry: RetryPolicy
        /// The HTTP client's settings: timeouts, redirects, trust roots, proxies, user agent and
        /// cookies.
        public var http: AsyncHTTPTransport.Configuration
        /// Which HTTP versions downloads may use (`--http1.1`, `--http2`); by default HTTP/2 for
        /// a download over one connection when the server offers it.
        public var httpVersions: HTTPVersionPolicy
        /// No segment smaller than this is split off for another connection (`-k`).
        public var minimumSegmentSize: Int64
        /// Bytes per second for everything this manager downloads; nil (or under 1) for no limit.
        public var maxBytesPerSecond: Int64?
        /// Retries, restarts and why, refused connections, failed checkpoints. Silent by default.
        public var logger: Logger
        /// Where the engine's own measurements go (checkpoint latency); nil records nothing.
        public var metricsFactory: (any MetricsFactory)?
        /// Whether the store keeps requests' credentials, so a resume after a restart has them
        /// (the daemon: its store is private, 0600). `haul get` keeps none: a re-run supplies
        /// them again, and until then they live only in memory.
        public var keepsCredentials: Bool
        /// The directories downloads may be written in (the daemon's `-d` and `--allow-dir`):
        /// each download's directory is resolved beneath the one that contains it whenever a
        /// run uses it, following no symbolic link below it, and one outside them all fails.
        /// Nil (`haul get`): each download's directory is its own root; links inside it are
        /// still never followed.
        public var downloadRoots: [String]?
        /// This boot's identity: progress noted between checkpoints without fsync is trusted
        /// after a killed process only on the same boot. Nil reads the system's
        /// (`/proc/sys/kernel/random/boot_id`; none elsewhere, and then nothing is noted).
        /// Tests set their own to play a reboot.
        public var bootID: String?
        /// Connections to one host at once, over every download of this manager
        /// (`--max-connections-per-host`), shared fairly; nil: only each download's own `-x`.
        /// Either way a host that refuses a connection (429, 503) gets fewer for a while.
        public var maxConnectionsPerHost: Int?
        /// Requests in flight past `maxConcurrentDownloads` (`SlotProbes`, `haul get`'s default):
        /// a download that may be small is sent without a slot, up to `maxConnectionsPerHost`
        /// (else 16) per HTTP/1.1 host and 100 per HTTP/2 host, and takes a slot only when its
        /// response brings more than 1 MiB or no length. False (the default, and the daemon's):
        /// exactly `maxConcurrentDownloads` run, the others wait in the list.
        public var sendsPastLimit = false
        /// Run through `/bin/sh -c` for a fresh URL when a download's signed URL expires
        /// (`--refresh-command`, `URLRefresher`); nil: the download fails as `url-expired`,
        /// keeping its bytes, until it is given one. Never set over an API.
        public var refreshCommand: String?
        /// Files kept by digest (`--content-store DIR`): a download whose request names a
        /// SHA-256 or SHA-512 the store has links that file instead of fetching it, and every
        /// such download that completes puts its file there. Nil: no store (a twin that
        /// completed is still copied by the downloads of its digest that waited for it).
        public var contentStore: ContentStore?
        /// A fleet host's renewal, which also hears other hosts' commands when no notification
        /// brought them (`haul_commands`): every second by default, and never less often than
        /// a quarter of the lease. A test sets it long to show that notifications deliver.
        public var fleetRenewInterval: Duration?
        /// How long a graceful shutdown of the service group that runs the manager (`run()`)
        /// waits for running downloads to checkpoint and stop; nil: as long as they take.
        public var shutdownDeadline: Duration?
        /// The system calls that write, sync and close each `.part`; a test's can hold one
        /// download's writes back.
        var fileCalls = FileCalls.system

        /// The settings not among the parameters start as nil: no refresh command, no content
        /// store, a fleet host's default renewal, and a shutdown that waits as long as the downloads take.
        public init(
            stateDirectory: String,
            maxConcurrentDownloads: Int = 3,
            checkpointInterval: Duration = .seconds(1),
            progressInterval: Duration = .milliseconds(250),
            retry: RetryPolicy = .init(),
            http: AsyncHTTPTransport.Configuration = .init(),
            minimumSegmentSize: Int64 = 1 << 20,
            maxBytesPerSecond: Int64? = nil,
            logger: Logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: (any MetricsFactory)? = nil,
            keepsCredentials: Bool = false,
            downloadRoots: [String]? = nil,
            bootID: String? = nil,
            maxConnectionsPerHost: Int? = nil,
            httpVersions: HTTPVersionPolicy = .automatic
        ) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.httpVersions = httpVersions
            self.stateDirectory = stateDirectory
            self.maxConcurrentDownloads = maxConcurrentDownloads
            self.checkpointInterval = checkpointInterval
            self.progressInterval = progressInterval
            self.retry = retry
            self.http = http
            self.minimumSegmentSize = minimumSegmentSize
            self.maxBytesPerSecond = maxBytesPerSecond
            self.logger = logger
            self.metricsFactory = metricsFactory
            self.keepsCredentials = keepsCredentials
            self.downloadRoots = downloadRoots
            self.bootID = bootID
        }

        /// What every download's state machine is told.
        var machineSettings: DownloadStateMachine.Settings {
            DownloadStateMachine.Settings(
                retry: retry, minimumSegment: max(1, minimumSegmentSize),
                minimumSteal: min(128 << 10, max(1, minimumSegmentSize)),
                checkpointInterval: checkpointInterval.seconds,
                tickInterval: min(progressInterval, checkpointInterval).seconds,
                httpVersions: httpVersions, refreshesURL: refreshCommand != nil)
        }
    }
}
