import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real HTTP proxy for tests: Debian's `tinyproxy`, run in the foreground with its own
/// configuration on a free 127.0.0.1 port, logging to a file the test reads to prove which
/// requests went through it.
///
/// ```swift
/// let proxy = try await TinyProxy.start(basicAuth: ("user", "pass"))
/// defer { proxy.stop() }
/// // ... send through "http://user:pass@127.0.0.1:\(proxy.port)"
/// #expect(proxy.tunnels().contains("127.0.0.1:\(server.port)"))
/// ```
public final class TinyProxy: @unchecked Sendable {
    /// The installed `tinyproxy`, if any (`.ci/run` installs Debian's package).
    public static let executable: String? = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy", "/usr/local/bin/tinyproxy"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    public let port: Int
    /// `http://127.0.0.1:PORT`, without credentials.
    public var url: String { "http://127.0.0.1:\(port)" }
    /// tinyproxy's log (its stderr), for assertions and for failure messages.
    public let logPath: String
    private let directory: String
    private let process: Process
    private let stopped = NIOLockedValueBox(false)

    private init(port: Int, logPath: String, directory: String, process: Process) {
        self.port = port
        self.logPath = logPath
        self.directory = directory
        self.process = process
    }

    deinit { stop() }

    /// Starts tinyproxy and returns once it accepts connections (bounded: a few seconds per try,
    /// three tries in case another process takes the port between choosing and binding it).
    /// - Parameters:
    ///   - basicAuth: require `Proxy-Authorization: Basic` with these credentials.
    ///   - connectPorts: allow `CONNECT` only to these ports (as Debian's default configuration
    ///     and Squid's allow only 443); nil allows every port.
    public static func start(
        basicAuth: (user: String, password: String)? = nil,
        connectPorts: [Int]? = nil
    ) async throws -> TinyProxy {
        guard let executable else { throw TinyProxyError.notInstalled }
        var lastLog = ""
        for _ in 0..<3 {
            let directory = NSTemporaryDirectory() + "haul-tinyproxy-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let port = try LoopbackPort.free()
            var config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 600
                Allow 127.0.0.1
                MaxClients 200
                LogLevel Info
                DisableViaHeader Yes

                """
            // tinyproxy refuses to run as root without somebody to become.
            if geteuid() == 0 { config += "User nobody\nGroup nogroup\n" }
            if let basicAuth { config += "BasicAuth \(basicAuth.user) \(basicAuth.password)\n" }
            // Without a ConnectPort line CONNECT may go to any port (the test servers' are ephemeral).
            for port in connectPorts ?? [] { config += "ConnectPort \(port)\n" }
            let configPath = directory + "/tinyproxy.conf"
            let logPath = directory + "/tinyproxy.log"
            try config.write(toFile: configPath, atomically: true, encoding: .utf8)
            FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["-d", "-c", configPath]
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try? log.close()
            let proxy = TinyProxy(port: port, logPath: logPath, directory: directory, process: process)
            // Up to 5 s: the log says it listens and the port accepts a connection.
            for _ in 0..<100 {
                guard process.isRunning else { break }
                if proxy.log.contains("Accepting connections"), LoopbackPort.acceptsConnections(port) { return proxy }
                try await Task.sleep(for: .milliseconds(50))
            }
            lastLog = proxy.log
            proxy.stop()
        }
        throw TinyProxyError.didNotStart(log: lastLog)
    }

    /// Everything tinyproxy logged so far.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// The targets (`host:port`) of every `CONNECT` request the proxy received, in order:
    /// AsyncHTTPClient tunnels http:// as well as https:// URLs through an HTTP proxy.
    public func tunnels() -> [String] {
        log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "): CONNECT ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }

    /// Kills the process and removes its files. Idempotent.
    public func stop() {
        let wasStopped = stopped.withLockedValue { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        if process.isRunning {
            // SIGKILL: started from a test, tinyproxy was still running 5 s after Process's
            // SIGTERM (probably the signal mask it inherits). Its log is written unbuffered.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

public enum TinyProxyError: Error, Sendable, CustomStringConvertible {
    case notInstalled
    case didNotStart(log: String)

    public var description: String {
        switch self {
        case .notInstalled: "tinyproxy is not installed (apt-get install tinyproxy; .ci/run does)"
        case .didNotStart(let log): "tinyproxy did not start:\n\(log)"
        }
    }
}
