import Haul
import HaulAPI
import HaulCore
import HaulStore
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

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

/// `haul serve`: a `DownloadManager` on the SQLite store behind the HTTP API and the web page,
/// run as a service group so SIGTERM and SIGINT checkpoint every download and stop in time.
public struct Daemon: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// The API token; nil generates a fresh one. Required off loopback.
        public var secret: String?
        /// `$HAUL_HOME`: the store, the locks and `serve.json`.
        public var home: String
        /// Where downloads go unless a request names a directory.
        public var downloadDirectory: String
        /// Directories besides `downloadDirectory` that requests may name (`--allow-dir`).
        public var allowedDirectories: [String] = []
        public var manager: DownloadManager.Configuration
        /// Connections for new downloads that do not name theirs (`-x`, changeable through the API).
        public var defaultConnections: Int
        /// The daemon's log (the HTTP server, the service group, option changes); `init` makes it
        /// the engine's too (`manager.logger`). By default the process's `LoggingSystem` at `.warning`.
        public var logger: Logger
        /// SIGTERM to exit: the server gets this long to finish open requests; downloads then get
        /// 0.4 s to checkpoint (a checkpoint takes milliseconds; one still verifying a large file
        /// is verified again on the next start).
        public var shutdownDeadline: Duration
        /// Where the queue lives: SQLite under `home` (the default), or a fleet's PostgreSQL
        /// database shared with other hosts (`--store`).
        public var store: StoreLocation = .sqlite
        /// A fleet host that has not renewed its lease on a download for this long loses it to
        /// another host (`--lease-timeout`).
        public var leaseTimeout: Duration = .seconds(15)
        /// This host's name in the fleet, as listings show it; by default the host name and pid.
        public var fleetName: String?
        /// `serve.json` (the address and token) readable by the daemon's group and `home`
        /// searchable by it, so that group's members run `haul add`, `ls`, `page`
        /// (`--share-with-group`, as `haul.service` runs it).
        public var sharesWithGroup = false
        /// What opens a `.postgres` store: `haul-fleet` gives HaulFleet's; without one such a
        /// store is refused.
        public var fleet: (any FleetOpening)?
        /// Header and idle timeouts, and how many connections may be open without the token.
        public var connections = ConnectionGuard.Configuration()
        /// Host names besides loopback and `host` that requests may name (`--allow-host`).
        public var allowedHosts: [String] = []
        /// HTTPS and WSS instead of HTTP and WS (`--tls-certificate`, `--tls-key`).
        public var tls: DaemonTLS?
        /// Commands and a webhook run when downloads end (`--on-complete`, `--on-error`, `--webhook`).
        public var hooks = DaemonHooks()
        /// The global limit by time of week (`--limit-schedule`), in the host's local time;
        /// `manager.maxBytesPerSecond` holds outside its rules.
        public var limitSchedule: SpeedSchedule?
        /// Reads the configuration file again on SIGHUP and says what changed (`haul serve` gives
        /// one); nil: SIGHUP is logged and ignored. Runs on the daemon's own task, one at a time.
        public var reload: (@Sendable () throws -> SettingsReload)?
        /// Resolves the names of content an add may give (`s3://`), with the daemon's own keys
        /// and settings, never an add's; nil: such names are refused.
        public var content: ContentResolver?
        /// Where `hf://` files go in the Hub's cache layout (`--hf-cache`); nil: the repository's
        /// tree under the add's directory.
        public var hubCache: String?
        /// New downloads that do not say are read in order (`--sequential`).
        public var sequential = false

        public init(
            host: String = "127.0.0.1", port: Int = 6800, secret: String? = nil, home: String,
            downloadDirectory: String, maxConcurrentDownloads: Int = 3, defaultConnections: Int = 1,
            maxBytesPerSecond: Int64? = nil,
            logger: Logger = Daemon.defaultLogger,
            shutdownDeadline: Duration = .milliseconds(1500)
        ) {
            self.host = host
            self.port = port
            self.secret = secret
            self.home = home
            self.downloadDirectory = downloadDirectory
            self.manager = .init(
                stateDirectory: home, maxConcurrentDownloads: maxConcurrentDownloads,
                maxBytesPerSecond: maxBytesPerSecond, logger: logger)
            self.defaultConnections = defaultConnections
            self.logger = logger
            self.shutdownDeadline = shutdownDeadline
        }

        /// The daemon's own rules, checked once before anything starts (`haul serve` checks its
        /// flags' forms; these hold for any caller of `Daemon`).
        public func check() throws(HaulError) {
            if secret == nil, !Daemon.isLoopback(host) {
                throw HaulError(
                    .usage, "refusing to listen on \(host) without --secret: anyone who reaches it could fill your disk"
                )
            }
            if let secret, secret.count < 8 || secret.contains(where: { $0.isWhitespace }) {
                throw HaulError(.usage, "--secret must be at least 8 characters, without spaces")
            }
            guard (0...65535).contains(port) else {
                throw HaulError(.usage, "--port must be between 0 and 65535, not \(port)")
            }
            try Limits.check(defaultConnections, in: Limits.connections, field: "-x", code: .usage)
            if let rate = manager.maxBytesPerSecond, rate <= 0 {
                throw HaulError(.usage, "--limit-rate must be positive, not \(rate)")
            }
            if case .postgres = store, leaseTimeout < .seconds(1) {
                throw HaulError(.usage, "--lease-timeout must be at least 1 second")
            }
        }
    }

    public let configuration: Configuration

    public static var defaultLogger: Logger {
        var logger = Logger(label: "haul.serve")
        logger.logLevel = .warning
        return logger
    }

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs until SIGTERM or SIGINT. `ready` gets the address and secret once the socket listens.
    public func run(ready: @escaping @Sendable (ServeFile) -> Void = { _ in }) async throws {
        let configuration = self.configuration
        try configuration.check()
        let tlsConfiguration = try configuration.tls.map { tls throws(HaulError) in try tls.configuration() }
        DaemonTLS.warnIfPlain(host: configuration.host, tls: configuration.tls, logger: configuration.logger)
        // Idle sockets must not be what stops the daemon from accepting its owner's requests.
        let descriptorLimit = ConnectionGuard.raiseDescriptorLimit()
        let lock = try DaemonLock.acquire(home: configuration.home)
        if configuration.sharesWithGroup, chmod(configuration.home, 0o750) != 0 {
            let reason = String(cString: strerror(errno))
            throw HaulError(
                .fileSystem, "cannot open the state directory \(configuration.home) to its group: \(reason)")
        }
        defer { withExtendedLifetime(lock) {} }
        try Directories.create(configuration.downloadDirectory, what: "download directory")

        for directory in configuration.allowedDirectories {
            try Directories.create(directory, what: "allowed directory")
        }

        let secret = configuration.secret ?? Token.random(bytes: 32)
        let metrics = DaemonMetrics()
        var managerConfiguration = configuration.manager
        managerConfiguration.metricsFactory = metrics.factory
        // Its state is private: a download added with credentials resumes after a restart.
        managerConfiguration.keepsCredentials = true
        // Every run resolves its directory beneath these, following no link (issue 19).
        managerConfiguration.downloadRoots = ([configuration.downloadDirectory] + configuration.allowedDirectories).map(
            AddRequest.normalized)
        // A graceful shutdown (SIGTERM, aria2.shutdown) stops the runs at a checkpoint within this,
        // inside the service group's own limit (`shutdownDeadline`); one still verifying resumes
        // at the next start.
        managerConfiguration.shutdownDeadline = managerConfiguration.shutdownDeadline ?? .milliseconds(400)
        let manager: DownloadManager
        // The fleet's pool of connections, run by the service group (first, so it stops last).
        var fleetStore: (any FleetQueue)?
        switch configuration.store {
        case .sqlite:
            manager = try await DownloadManager(configuration: managerConfiguration)
        case .postgres(let location):
            guard let fleet = configuration.fleet else {
                throw HaulError(
                    .usage, "this haul has no PostgreSQL fleet: run haul-fleet serve for --store \(location)")
            }
            let store = try await fleet.open(
                location, host: configuration.fleetName ?? Self.defaultFleetName(),
                leaseTimeout: configuration.leaseTimeout, logger: configuration.logger)
            fleetStore = store
            do {
                manager = try await DownloadManager(configuration: managerConfiguration, fleet: store)
            } catch {
                await store.close()
                throw error
            }
        }
        // From here the manager is this scope's: shut down however the service group ends.
        try await Self.shuttingDown(manager) {
            // Trapped now: SIGHUP's default action would stop the daemon.
            let hangups = await UnixSignalsSequence(trapping: .sighup)
            let built = Self.buildApplication(
                configuration: configuration, manager: manager, metrics: metrics, secret: secret,
                tls: tlsConfiguration, descriptorLimit: descriptorLimit, hangups: hangups, ready: ready)
            let pid = getpid()
            let home = configuration.home
            let logger = configuration.logger
            let services =
                (fleetStore.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? [])
                + built.services
            var group = ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            group.maximumGracefulShutdownDuration = configuration.shutdownDeadline
            defer {
                SystemdNotify.send("STOPPING=1")
                do throws(HaulError) {
                    try ServeFile.remove(home: home, pid: pid)
                } catch {
                    // Harmless for the next start (it checks the pid), but said.
                    logger.warning("\(error.message)")
                }
            }
            let serviceGroup = ServiceGroup(configuration: group)
            built.stopper.set(serviceGroup)
            // The group runs the manager: the restore once listening may come before its run().
            try await manager.prepareToRun()
            do {
                try await serviceGroup.run()
            } catch let error as HaulError {
                throw error
            } catch {
                throw Self.classify(error, host: configuration.host, port: configuration.port)
            }
        }
    }

    /// Runs `body`, then shuts `manager` down however `body` ended: returned (its graceful
    /// shutdown done, this returns at once), threw, or cancelled (the service group cancelled, or
    /// past `shutdownDeadline`, which cancels what has not stopped). The manager then closes its
    /// HTTP clients and its store, which trap in their deinit when they were not shut down.
    static func shuttingDown(_ manager: DownloadManager, after body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await manager.shutdown()
            throw error
        }
        await manager.shutdown()
    }

    /// `HOST/PID`: unique on a machine, and says where to look.
    static func defaultFleetName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(cString: name) : "host"
        return "\(host)/\(getpid())"
    }

    /// A failure to bind says so; anything else is reported as what it is.
    static func classify(_ error: any Error, host: String, port: Int) -> HaulError {
        if let error = error as? IOError, [EADDRINUSE, EADDRNOTAVAIL, EACCES].contains(error.errnoCode) {
            return HaulError(.inUse, "cannot listen on \(host):\(port): \(String(cString: strerror(error.errnoCode)))")
        }
        if let error = error as? SocketAddressError {
            return HaulError(.usage, "cannot listen on \(host):\(port): the address does not resolve (\(error))")
        }
        return HaulError(.internal, "the daemon stopped: \(describe(error))", underlying: error)
    }

    /// Whether `host` is a loopback address (or `localhost`), judged by the address it parses
    /// to: a name such as `127.example.com` is not loopback, `127.0.0.2` and `::1` are.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(host.trimmed { $0 == "[" || $0 == "]" }), &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
        }
        return false
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }
}

/// One daemon per `$HAUL_HOME`: an `flock` on `serve.lock`, dropped by the kernel if it dies.
final class DaemonLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    static func acquire(home: String) throws(HaulError) -> DaemonLock {
        // The store keeps request headers (cookies, tokens): a new state directory is private.
        try Directories.create(home, what: "state directory", isPrivate: true)
        let path = Paths.join(home, "serve.lock")
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw HaulError(.fileSystem, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            // Only a detail of the error thrown: an unreadable file leaves it out.
            let running = (try? ServeFile.read(home: home)).flatMap { $0 }
            let detail = running.map { " (pid \($0.pid), \($0.url))" } ?? ""
            throw HaulError(.inUse, "a haul daemon is already running for \(home)\(detail)")
        }
        return DaemonLock(descriptor: descriptor)
    }
}
