import Haul
import HaulAPI
import HaulCore
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
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

/// `haul serve` built from a manager that exists: the routes, the HTTP application that serves
/// them (TLS, the connection guard, WebSocket upgrades), and every service the daemon runs. `run`
/// hands them to one `ServiceGroup`; tests drive `buildRouter`'s routes through
/// HummingbirdTesting's `.router`, without a socket.
extension Daemon {
    /// What runs: the services in the order the group starts them (it stops them in reverse:
    /// the server first, so no new request comes; then the speed schedule; then the manager,
    /// which checkpoints and ends its streams; then what reads those streams).
    struct Built {
        var services: [ServiceGroupConfiguration.ServiceConfiguration]
        /// Handed the group once it exists, for `aria2.shutdown`.
        var stopper: ShutdownTrigger
    }

    /// Everything the routes share.
    struct RouteParts {
        var manager: DownloadManager
        var defaults: DaemonDefaults
        var settings: DownloadSettingsCache
        var metrics: DaemonMetrics
        var secret: String
        var connections: ConnectionGuard
        var hosts: HostCheck
        var rpc: Aria2RPC
        var logger: Logger
    }

    /// The parts of the routes for `manager`, as `configuration` says.
    static func routeParts(
        configuration: Configuration, manager: DownloadManager, metrics: DaemonMetrics, secret: String,
        descriptorLimit: Int, stopper: ShutdownTrigger, keepsFinishes: Bool = false
    ) -> RouteParts {
        let logger = configuration.logger
        let defaults = DaemonDefaults(
            directory: configuration.downloadDirectory, connections: configuration.defaultConnections,
            allowedDirectories: configuration.allowedDirectories, limitSchedule: configuration.limitSchedule,
            content: configuration.content, keepsFinishes: keepsFinishes, hubCache: configuration.hubCache,
            logger: logger)
        defaults.sequential = configuration.sequential
        return RouteParts(
            manager: manager, defaults: defaults, settings: DownloadSettingsCache(manager: manager), metrics: metrics,
            secret: secret,
            connections: ConnectionGuard(
                configuration: configuration.connections, descriptorLimit: descriptorLimit, logger: logger),
            hosts: HostCheck(host: configuration.host, allowedNames: configuration.allowedHosts),
            rpc: Aria2RPC(
                manager: manager, defaults: defaults, secret: secret, logger: logger, shutdown: { stopper.trigger() }),
            logger: logger)
    }

    /// The HTTP routes: the page, the API under `/api/v1`, `/metrics`, and aria2's JSON-RPC.
    static func buildRouter(_ parts: RouteParts) -> Router<DaemonRequestContext> {
        let router = Router(context: DaemonRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: HostCheckMiddleware(check: parts.hosts))
        WebPageRoutes.register(on: router)
        let api = router.group("api/v1").add(
            middleware: BearerAuthMiddleware(secret: parts.secret, connections: parts.connections))
        APIRoutes(manager: parts.manager, defaults: parts.defaults, settings: parts.settings, logger: parts.logger)
            .register(on: api)
        // The same token as the API: the figures name no download, but the queue's size is the owner's business.
        let (metrics, manager) = (parts.metrics, parts.manager)
        router.group("metrics").add(
            middleware: BearerAuthMiddleware(secret: parts.secret, connections: parts.connections)
        )
        .get { _, _ in try await metrics.scrape(manager) }
        Aria2Routes.register(parts.rpc, connections: parts.connections, on: router)
        return router
    }

    /// The WebSocket routes: aria2's JSON-RPC and its notifications.
    static func buildWebSocketRouter(_ parts: RouteParts) -> Router<DaemonWebSocketContext> {
        let webSockets = Router(context: DaemonWebSocketContext.self)
        webSockets.add(middleware: HostCheckMiddleware(check: parts.hosts))
        let manager = parts.manager
        Aria2Routes.registerWebSocket(
            parts.rpc, events: { manager.events() }, outcomes: { manager.outcomes() },
            hosts: parts.hosts, connections: parts.connections, on: webSockets)
        return webSockets
    }

    /// The daemon's services around `manager`: observers of its streams (metrics, hooks), the
    /// manager itself, the speed schedule, and the HTTP application. `ready` is called once the
    /// socket listens and the queue is restored.
    static func buildApplication(
        configuration: Configuration, manager: DownloadManager, metrics: DaemonMetrics, secret: String,
        tls: TLSConfiguration?, descriptorLimit: Int, hangups: UnixSignalsSequence,
        ready: @escaping @Sendable (ServeFile) -> Void
    ) -> Built {
        let logger = configuration.logger
        let stopper = ShutdownTrigger()
        let parts = routeParts(
            configuration: configuration, manager: manager, metrics: metrics, secret: secret,
            descriptorLimit: descriptorLimit, stopper: stopper, keepsFinishes: true)
        // Subscribed now: the queue restored once the socket listens runs no download unseen.
        let (events, outcomes) = (manager.events(), manager.outcomes())
        var observers: [any Service] = [
            ObserverService { await metrics.observe(events) },
            ObserverService { await metrics.observe(outcomes: outcomes) },
        ]
        if !configuration.hooks.isEmpty {
            let hooks = HookDispatcher(
                hooks: configuration.hooks, clock: ClockAdapter(ContinuousClock()), logger: logger)
            let hooked = manager.outcomes()
            observers.append(ObserverService { await hooks.observe(outcomes: hooked) })
        }
        // Always run: a reload may give a schedule the daemon started without.
        let scheduler = SpeedScheduler(
            schedule: configuration.limitSchedule,
            fallback: configuration.manager.maxBytesPerSecond.flatMap(ByteRate.limit),
            clock: ClockAdapter(ContinuousClock()), now: { Date() }, moment: SpeedScheduler.localMoment,
            logger: logger, apply: { manager.globalLimiter.setRate($0) })
        let reload = ReloadService(
            hangups: hangups, reload: configuration.reload,
            target: ReloadTarget(manager: manager, defaults: parts.defaults, scheduler: scheduler), logger: logger)
        let router = buildRouter(parts)
        let webSocketResponder = buildWebSocketRouter(parts).buildResponder()
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: TimeAmount(configuration.connections.idleTimeout)),
            ws: .init(maxFrameSize: Aria2RPC.maxRequestSize))
        let connections = parts.connections
        let pid = getpid()
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                try DaemonTLS.wrap(
                    GuardedChildChannel(
                        base: HTTP1WebSocketUpgradeChannel(
                            responder: responder, webSocketResponder: webSocketResponder,
                            configuration: channelConfiguration),
                        connectionGuard: connections),
                    in: tls)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "haul"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
                let file = ServeFile(
                    url: "\(tls == nil ? "http" : "https")://\(host):\(port)", pid: pid, secret: secret)
                // Listening first, then the queue (a daemon that cannot bind starts nothing),
                // then the address for the CLI: its first command finds the queue restored.
                do {
                    // An older daemon's pending finishes become groups first: the restore checks them.
                    try await PendingFinishImport.run(
                        folder: Paths.join(configuration.manager.stateDirectory, "finishes"), into: manager,
                        logger: logger)
                    try await manager.restore()
                    parts.rpc.follows.load(try await manager.groups())
                    logger.info(
                        "ready",
                        metadata: [
                            "descriptors": "\(descriptorLimit)",
                            "unauthenticatedConnections": "\(connections.maxUnauthenticated)",
                            "url": "\(file.url)", "directory": "\(configuration.downloadDirectory)",
                            "jobs": "\(configuration.manager.maxConcurrentDownloads)",
                            "connections": "\(configuration.defaultConnections)",
                            "maxBytesPerSecond":
                                "\(configuration.manager.maxBytesPerSecond.map(String.init) ?? "none")",
                        ])
                } catch {
                    logger.error("cannot restore the queue: \(error)")
                }
                do {
                    try file.write(home: configuration.home, groupReadable: configuration.sharesWithGroup)
                } catch {
                    logger.error("\(error)")
                }
                ready(file)
                // Under systemd's Type=notify: started only now, with the queue restored.
                SystemdNotify.send("READY=1\nSTATUS=serving \(file.url)")
            },
            logger: logger)
        var services = observers.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
        // A graceful shutdown stops its runs at a checkpoint (`configuration.manager.shutdownDeadline`).
        services.append(.init(service: manager))
        services.append(.init(service: SpeedScheduleService(scheduler: scheduler)))
        services.append(.init(service: reload))
        services.append(.init(service: application))
        return Built(services: services, stopper: stopper)
    }
}
