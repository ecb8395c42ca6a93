import ArgumentParser
import Haul
import HaulAPI
import HaulCore
import HaulServer
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

/// `haul serve`: the daemon in the foreground (run it under systemd, tmux or `nohup ... &`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the download daemon: a persistent queue, an HTTP API, aria2's JSON-RPC and a web page.",
        discussion: """
            Writes its address and a fresh token to $HAUL_HOME/serve.json (mode 0600), where \
            'haul add', 'ls', 'pause', 'resume', 'rm' and 'watch' find it. Downloads that were \
            running when it last stopped (even by kill -9) resume; paused ones stay paused. \
            SIGTERM or Ctrl-C checkpoints every download and exits. SIGHUP reads the configuration \
            file again and applies jobs, connections, limit-rate and limit-schedule at once (other \
            changed options are named in the log: they need a restart). aria2 clients (AriaNg, aria2p) \
            connect to http://HOST:PORT/jsonrpc with the same token as their RPC secret. \
            Downloads go only under -d and the --allow-dir directories. API: docs/API.md.
            """
    )

    @Option(
        help: "Address to listen on. Anything but loopback needs --secret, and --tls-certificate to keep it private.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 6800

    @Option(
        name: [.customShort("d"), .customLong("dir")],
        help: "Where downloads go by default (default: current directory).")
    var directory: String?

    @Option(
        name: .customLong("allow-dir"),
        help: ArgumentHelp("Also allow downloads into DIR (repeatable); by default only under -d.", valueName: "DIR"))
    var allowedDirectories: [String] = []

    @OptionGroup var engine: EngineOptions<ServeCommand>
    var jobs: Int { engine.jobs ?? 3 }
    var connections: Int { engine.connections ?? 1 }

    @Flag(
        name: .customLong("share-with-group"),
        help: """
            Make serve.json (the address and token) readable by the daemon's group, and $HAUL_HOME \
            searchable by it, so its members run haul add, ls, watch and page (haul.service does).
            """)
    var sharesWithGroup = false

    @Flag(name: .shortAndLong, help: "Log at debug level on stderr (failed connections, ...), not only at info.")
    var verbose = false

    @Flag(
        help: """
            Read new downloads in order unless their add says (REST sequential, aria2's stream-piece-selector): \
            the first and last pieces first, then every connection just ahead of the first missing byte.
            """)
    var sequential = false

    @Option(help: "The API token (default: $HAUL_SECRET, else a fresh random one). Required off loopback.")
    var secret: String?

    @Option(
        help: ArgumentHelp(
            """
            Where the queue lives: sqlite (default, under $HAUL_HOME) or \
            postgres://USER[:PASSWORD]@HOST[:PORT]/DB, one queue shared by every host that names it (default: \
            $HAUL_STORE).
            """,
            valueName: "URL"))
    var store: String?

    @Option(
        help: ArgumentHelp(
            "With a postgres store: a host silent this long loses its downloads to the others (default 15).",
            valueName: "SECONDS"))
    var leaseTimeout: Double = 15

    @Option(
        help: ArgumentHelp(
            """
            With a postgres store: this host's name in listings (default: HOSTNAME/PID). One live host per name \
            (another exits 16); restarted under the same name, a host takes its downloads back at once.
            """,
            valueName: "NAME"))
    var fleetName: String?

    @Option(
        help: ArgumentHelp(
            "Close a connection whose first request has not fully arrived after this long (default 10).",
            valueName: "SECONDS"))
    var headerTimeout: Double = 10

    @Option(
        help: ArgumentHelp(
            "Close a keep-alive connection idle between requests for this long (default 60).", valueName: "SECONDS"))
    var idleTimeout: Double = 60

    @Option(
        help: ArgumentHelp(
            "Connections that have not shown the token, kept at once; one more closes the oldest (default 256).",
            valueName: "N"))
    var maxUnauthenticatedConnections = 256

    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "Also accept requests whose Host is NAME (repeatable); by default only loopback and --host.",
            valueName: "NAME"))
    var allowedHosts: [String] = []

    @Option(
        help: ArgumentHelp(
            """
            Serve HTTPS and WSS with this PEM certificate chain (with --tls-key); needed to keep the token \
            private off loopback.
            """,
            valueName: "FILE"))
    var tlsCertificate: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-certificate.", valueName: "FILE"))
    var tlsKey: String?

    @OptionGroup(title: "Configuration file")
    var config: ConfigOptions

    @OptionGroup(title: "S3")
    var content: ContentSourceOptions

    @OptionGroup(title: "HTTP version")
    var httpVersion: HTTPVersionOptions

    @OptionGroup(title: "Hooks and speed schedule")
    var hookOptions: ServeHookOptions

    var storeLocation: StoreLocation {
        get throws {
            let text =
                store ?? ProcessInfo.processInfo.environment["HAUL_STORE"].flatMap { $0.isEmpty ? nil : $0 } ?? "sqlite"
            do {
                return try StoreLocation(parsing: text)
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    func validate() throws {
        if !(headerTimeout > 0 && headerTimeout <= 3600) {
            throw ValidationError("--header-timeout must be between 0 and 3600 seconds")
        }
        if !(idleTimeout > 0 && idleTimeout <= 86_400) {
            throw ValidationError("--idle-timeout must be more than 0 and at most 86400 seconds")
        }
        if (tlsCertificate == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-certificate and --tls-key go together")
        }
        if maxUnauthenticatedConnections < 1 {
            throw ValidationError("--max-unauthenticated-connections must be at least 1")
        }
        if !(leaseTimeout >= 1 && leaseTimeout <= 86_400) {
            throw ValidationError("--lease-timeout must be between 1 and 86400 seconds")
        }
        _ = try storeLocation
    }

    func run() async throws {
        let store = try storeLocation
        if case .postgres = store, FleetExecutable.opening == nil {
            try FleetExecutable.execute(arguments: Array(CommandLine.arguments.dropFirst()))
        }
        let environmentSecret = ProcessInfo.processInfo.environment["HAUL_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        // Requests (server), queue changes (daemon) and retries, restarts, refusals (engine), on stderr.
        var logger = Logger(label: "haul.serve", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .info
        var configuration = Daemon.Configuration(
            host: host, port: port, secret: secret ?? environmentSecret, home: HaulHome.path(),
            downloadDirectory: HaulHome.absolute(directory ?? "."), maxConcurrentDownloads: jobs,
            defaultConnections: connections, maxBytesPerSecond: try engine.maxBytesPerSecond(),
            logger: logger)
        configuration.allowedDirectories = allowedDirectories.map { HaulHome.absolute($0) }
        configuration.sequential = sequential
        configuration.manager.checkpointInterval = engine.checkpoint
        configuration.manager.maxConnectionsPerHost = engine.maxConnectionsPerHost
        configuration.manager.refreshCommand = engine.refreshCommand
        configuration.manager.contentStore = engine.store
        // A store that cannot be written ends the start, one line.
        try engine.store?.prepare()
        if let bootId = engine.bootId { configuration.manager.bootID = bootId }
        configuration.manager.httpVersions = httpVersion.policy
        // `s3://` names in adds: resolved and signed with the daemon's own keys (its
        // environment, ~/.aws), never an add's.
        // A bad setting (an AWS_PROFILE no file has) ends the start, one line, exit 2.
        let profiles = try content.profiles(environment: ProcessInfo.processInfo.environment)
        configuration.manager.http.awsCredentials = profiles.credentials
        configuration.content = ContentResolver(
            s3Endpoint: try content.endpoint(), s3Region: profiles.region ?? "us-east-1",
            http: configuration.manager.http,
            oci: try content.ociSettings(for: [], environment: ProcessInfo.processInfo.environment),
            hub: try content.hubSettings(environment: ProcessInfo.processInfo.environment))
        configuration.hubCache = content.hfCache.map(HaulHome.absolute)
        configuration.store = store
        configuration.fleet = FleetExecutable.opening
        configuration.sharesWithGroup = sharesWithGroup
        configuration.leaseTimeout = .milliseconds(Int64(leaseTimeout * 1000))
        configuration.fleetName = fleetName
        configuration.connections.headerTimeout = .milliseconds(Int64(headerTimeout * 1000))
        configuration.connections.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.connections.maxUnauthenticated = maxUnauthenticatedConnections
        configuration.allowedHosts = allowedHosts
        configuration.hooks = try hookOptions.hooks()
        configuration.limitSchedule = try hookOptions.schedule()
        if !config.skips {
            // SIGHUP reads the file again; the command line as typed (before the file's options).
            let reload = ServeReload(
                arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                file: ConfigArguments.readAtStart)
            configuration.reload = { try reload.reload() }
        }
        if let tlsCertificate, let tlsKey {
            configuration.tls = DaemonTLS(
                certificatePath: HaulHome.absolute(tlsCertificate), keyPath: HaulHome.absolute(tlsKey))
        }
        let daemon = Daemon(configuration: configuration)
        // The token is never printed: under systemd stdout lands in the journal, readable by
        // more people than serve.json (mode 0600) is.
        let home = daemon.configuration.home
        try await daemon.run { file in
            print(
                """
                haul serve: listening on \(file.url) (pid \(file.pid)); downloads go to \
                \(daemon.configuration.downloadDirectory)
                """
            )
            print(
                """
                web page: \(file.url)/ (its token is in \(ServeFile.path(home: home)): 'haul page' prints the \
                full address)
                """
            )
            print("aria2 JSON-RPC: \(file.url)/jsonrpc (secret: the same token)")
            fflush(nil)
        }
        print("haul serve: stopped")
    }
}

extension ServeCommand: EngineOptionsRole {
    static let jobsHelp = ArgumentHelp(
        """
        Downloads transferring at once (1 to 1000, default 3; changeable through the API). One whose bytes are \
        all in lets the next start while it is verified and published (at most max(N, 16) such at once).
        """
    )
    static let connectionsNames: NameSpecification = [.customShort("x"), .customLong("connections")]
    static let connectionsHelp = ArgumentHelp(
        "Connections per file for new downloads that do not say (1 to 64, default 1; changeable through the API).",
        valueName: "N")
    static let connectionsPerHostHelp = ArgumentHelp(
        """
        At most N connections to one host at once, shared fairly by every download to it (1 to 1024; default: \
        each download's own). A host that refuses a connection (429, 503) gets fewer for a while either way.
        """,
        valueName: "N")
    static let limitRateHelp = ArgumentHelp(
        "At most RATE bytes per second for all downloads together (K, M, G suffixes; changeable through the API).",
        valueName: "RATE")
    static let refreshCommandHelp = ArgumentHelp(
        """
        When a download's URL expires midway, run CMD with sh -c for a new one (HAUL_URL, HAUL_ID, HAUL_PATH in \
        its environment; it prints the URL). Only here: never settable over the API.
        """,
        valueName: "CMD")
}
