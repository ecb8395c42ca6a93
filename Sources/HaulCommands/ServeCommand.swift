import ArgumentParser
import Foundation
import HaulCore
import HaulServer

/// `haul serve`: the daemon in the foreground (run it under systemd, tmux or `nohup ... &`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the download daemon: a persistent queue, an HTTP API and a web page.",
        discussion: """
            Writes its address and a fresh token to $HAUL_HOME/serve.json (mode 0600), where \
            'haul add', 'ls', 'pause', 'resume', 'rm' and 'watch' find it. Downloads that were \
            running when it last stopped (even by kill -9) resume; paused ones stay paused. \
            SIGTERM or Ctrl-C checkpoints every download and exits. API: docs/API.md.
            """
    )

    @Option(help: "Address to listen on. Anything but loopback needs --secret.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 6800

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Where downloads go by default (default: current directory).")
    var directory: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads running at once (changeable through the API).")
    var jobs = 3

    @Option(help: "The API token (default: a fresh random one). Required off loopback.")
    var secret: String?

    func validate() throws {
        if jobs < 1 { throw ValidationError("-j must be at least 1") }
    }

    func run() async throws {
        let daemon = Daemon(configuration: .init(
            host: host, port: port, secret: secret, home: HaulHome.path(),
            downloadDirectory: HaulHome.absolute(directory ?? "."), maxConcurrentDownloads: jobs))
        try await daemon.run { file in
            print("haul serve: listening on \(file.url) (pid \(file.pid)); downloads go to \(daemon.configuration.downloadDirectory)")
            print("web page: \(file.url)/#token=\(file.secret)")
            fflush(nil)
        }
        print("haul serve: stopped")
    }
}
