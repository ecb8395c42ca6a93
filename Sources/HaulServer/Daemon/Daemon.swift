#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Haul
import HaulAPI
import HaulCore
import HaulStore
import HaulFleet
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

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

        public init(host: String = "127.0.0.1", port: Int = 6800, secret: String? = nil, home: String,
                    downloadDirectory: String, maxConcurrentDownloads: Int = 3, defaultConnections: Int = 1,
                    maxBytesPerSecond: Int64? = nil,
                    logger: Logger = Daemon.defaultLogger,
                    shutdownDeadline: Duration = .milliseconds(1500)) {
            self.host = host
            self.port = port
            self.secret = secret
            self.home = home
            self.downloadDirectory = downloadDirectory
            self.manager = .init(stateDirectory: home, maxConcurrentDownloads: maxConcurrentDownloads,
                                 maxBytesPerSecond: maxBytesPerSecond, logger: logger)
            self.defaultConnections = defaultConnections
            self.logger = logger
            self.shutdownDeadline = shutdownDeadline
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
        if configuration.secret == nil, !Self.isLoopback(configuration.host) {
            throw HaulError(.usage, "refusing to listen on \(configuration.host) without --secret: anyone who reaches it could fill your disk")
        }
        if let secret = configuration.secret, secret.count < 8 || secret.contains(where: { $0.isWhitespace }) {
            throw HaulError(.usage, "--secret must be at least 8 characters, without spaces")
        }
        guard (0...65535).contains(configuration.port) else {
            throw HaulError(.usage, "--port must be between 0 and 65535, not \(configuration.port)")
        }
        try Limits.check(configuration.defaultConnections, in: Limits.connections, field: "-x", code: .usage)
        if let rate = configuration.manager.maxBytesPerSecond, rate <= 0 {
            throw HaulError(.usage, "--limit-rate must be positive, not \(rate)")
        }
        let tlsConfiguration = try configuration.tls.map { tls throws(HaulError) in try tls.configuration() }
        DaemonTLS.warnIfPlain(host: configuration.host, tls: configuration.tls, logger: configuration.logger)
        // Idle sockets must not be what stops the daemon from accepting its owner's requests.
        let descriptorLimit = ConnectionGuard.raiseDescriptorLimit()
        let lock = try DaemonLock.acquire(home: configuration.home)
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
        managerConfiguration.downloadRoots = ([configuration.downloadDirectory] + configuration.allowedDirectories).map(AddRequest.normalized)
        let manager: DownloadManager
        switch configuration.store {
        case .sqlite:
            manager = try await DownloadManager(configuration: managerConfiguration)
        case .postgres(let location):
            guard configuration.leaseTimeout >= .seconds(1) else {
                throw HaulError(.usage, "--lease-timeout must be at least 1 second")
            }
            let store = try await PostgresDownloadStore.open(
                location, host: configuration.fleetName ?? Self.defaultFleetName(), leaseTimeout: configuration.leaseTimeout,
                keepsCredentials: true, logger: configuration.logger)
            do {
                manager = try await DownloadManager(configuration: managerConfiguration, fleet: store)
            } catch {
                await store.close()
                throw error
            }
        }
        let counting = Task { await metrics.observe(manager.events()) }
        let countingEnds = Task { await metrics.observe(outcomes: manager.outcomes()) }
        let logger = configuration.logger
        let hooks = configuration.hooks.isEmpty ? nil
            : HookDispatcher(hooks: configuration.hooks, clock: ClockAdapter(ContinuousClock()), logger: logger)
        let hooking = hooks.map { hooks in
            let outcomes = manager.outcomes()  // subscribed now: the queue restored later runs no download unseen
            return Task { await hooks.observe(outcomes: outcomes) }
        }
        let scheduling = configuration.limitSchedule.map { schedule in
            let scheduler = SpeedScheduler(
                schedule: schedule, fallback: configuration.manager.maxBytesPerSecond.flatMap(ByteRate.limit),
                clock: ClockAdapter(ContinuousClock()), now: { Date() }, timeZone: .current, logger: logger,
                apply: { manager.globalLimiter.setRate($0) })
            return Task { await scheduler.run() }
        }
        defer {
            counting.cancel()
            countingEnds.cancel()
            hooking?.cancel()
            scheduling?.cancel()
        }
        let defaults = DaemonDefaults(directory: configuration.downloadDirectory, connections: configuration.defaultConnections,
                                      allowedDirectories: configuration.allowedDirectories, limitSchedule: configuration.limitSchedule)
        let settings = DownloadSettingsCache(manager: manager)
        let stopper = ShutdownTrigger()
        let rpc = Aria2RPC(manager: manager, defaults: defaults, secret: secret, logger: logger, shutdown: { stopper.trigger() })

        let connections = ConnectionGuard(configuration: configuration.connections, descriptorLimit: descriptorLimit, logger: logger)
        let hosts = HostCheck(host: configuration.host, allowedNames: configuration.allowedHosts)
        let router = Router(context: DaemonRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: HostCheckMiddleware(check: hosts))
        WebPageRoutes.register(on: router)
        let api = router.group("api/v1").add(middleware: BearerAuthMiddleware(secret: secret, connections: connections))
        APIRoutes(manager: manager, defaults: defaults, settings: settings, logger: logger).register(on: api)
        // The same token as the API: the figures name no download, but the queue's size is the owner's business.
        router.group("metrics").add(middleware: BearerAuthMiddleware(secret: secret, connections: connections)).get { _, _ in try await metrics.scrape(manager) }
        Aria2Routes.register(rpc, connections: connections, on: router)
        let webSockets = Router(context: DaemonWebSocketContext.self)
        webSockets.add(middleware: HostCheckMiddleware(check: hosts))
        Aria2Routes.registerWebSocket(rpc, events: { manager.events() }, outcomes: { manager.outcomes() }, hosts: hosts, connections: connections, on: webSockets)
        let webSocketResponder = webSockets.buildResponder()
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: TimeAmount(configuration.connections.idleTimeout)),
            ws: .init(maxFrameSize: Aria2RPC.maxRequestSize))

        let pid = getpid()
        let home = configuration.home
        let app = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                try DaemonTLS.wrap(
                    GuardedChildChannel(base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder,
                                                                           configuration: channelConfiguration),
                                        connectionGuard: connections),
                    in: tlsConfiguration)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "haul"),
            onServerRunning: { [logger] channel in
                let port = channel.localAddress?.port ?? configuration.port
                let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
                let file = ServeFile(url: "\(tlsConfiguration == nil ? "http" : "https")://\(host):\(port)", pid: pid, secret: secret)
                // Listening first, then the queue (a daemon that cannot bind starts nothing),
                // then the address for the CLI: its first command finds the queue restored.
                do {
                    try await manager.restore()
                    logger.info("ready", metadata: [
                        "descriptors": "\(descriptorLimit)", "unauthenticatedConnections": "\(connections.maxUnauthenticated)",
                        "url": "\(file.url)", "directory": "\(configuration.downloadDirectory)",
                        "jobs": "\(configuration.manager.maxConcurrentDownloads)", "connections": "\(configuration.defaultConnections)",
                        "maxBytesPerSecond": "\(configuration.manager.maxBytesPerSecond.map(String.init) ?? "none")",
                    ])
                } catch {
                    logger.error("cannot restore the queue: \(error)")
                }
                do {
                    try file.write(home: home)
                } catch {
                    logger.error("\(error)")
                }
                ready(file)
            },
            logger: logger)
        var group = ServiceGroupConfiguration(
            // Stopped in reverse: first the server (no new requests; event streams end), then the
            // manager (checkpoints, store closed) within what is left of the deadline.
            services: [.init(service: ManagerService(manager: manager, deadline: .milliseconds(400))), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        group.maximumGracefulShutdownDuration = configuration.shutdownDeadline
        defer {
            do throws(HaulError) {
                try ServeFile.remove(home: home, pid: pid)
            } catch {
                // Harmless for the next start (it checks the pid), but said.
                logger.warning("\(error.message)")
            }
        }
        let serviceGroup = ServiceGroup(configuration: group)
        stopper.set(serviceGroup)
        do {
            try await serviceGroup.run()
        } catch let error as HaulError {
            throw error
        } catch {
            await manager.shutdown()
            throw Self.classify(error, host: configuration.host, port: configuration.port)
        }
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
        if inet_pton(AF_INET6, host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
        }
        return false
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return "\(error)"
    }
}

/// Lets `aria2.shutdown` stop the daemon as SIGTERM would: the service group is created after
/// the routes that need it, so it is handed over once it exists.
final class ShutdownTrigger: Sendable {
    private let group = NIOLockedValueBox<ServiceGroup?>(nil)

    func set(_ serviceGroup: ServiceGroup) {
        group.withLockedValue { $0 = serviceGroup }
    }

    /// Shortly after the answer has gone out.
    func trigger() {
        guard let serviceGroup = group.withLockedValue({ $0 }) else { return }
        Task {
            try? await Task.sleep(for: .milliseconds(100)) // a sleep in a task no one cancels
            await serviceGroup.triggerGracefulShutdown()
        }
    }
}

/// Owns the manager's lifetime inside the service group: on graceful shutdown it checkpoints and
/// stops every download (leaving them `running`, so the next start resumes them) and ends the
/// event streams, which lets the HTTP server finish its open responses and stop too.
struct ManagerService: Service {
    let manager: DownloadManager
    let deadline: Duration

    func run() async throws {
        // Returns on graceful shutdown or throws on cancellation: either way the manager stops.
        try? await gracefulShutdown()
        await manager.shutdown(deadline: deadline)
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
