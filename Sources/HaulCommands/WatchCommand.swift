import ArgumentParser
import HaulAPI
import HaulCore
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

/// `haul watch`: live progress of everything the daemon is running, until Ctrl-C. On a terminal
/// the bars redraw in place; otherwise one line per state change, for logs.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Show live progress of the daemon's downloads until Ctrl-C.")

    @OptionGroup var daemon: DaemonOptions

    func run() async throws {
        let client = try daemon.client()
        let events = try await client.events()
        let listed: [DownloadView] = try await client.get("/downloads")
        let terminal = isatty(STDOUT_FILENO) != 0
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        // Ctrl-C ends a watch normally: a final newline, exit 0.
        let interrupted = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in signals { return true }
                return false
            }
            group.addTask {
                var board = WatchBoard(downloads: listed, terminal: terminal)
                if board.terminal { board.draw(force: true) } else { board.printRunning() }
                for try await event in events {
                    guard let id = event.id else { continue }
                    if !board.knows(id) {
                        do {
                            let download: DownloadView = try await client.get("/downloads/\(id)")
                            board.insert(download)
                        } catch let error as HaulError where error.code == .notFound {
                            continue // removed before it could be shown
                        }
                    }
                    board.apply(event)
                    board.draw(force: event.type != .progress)
                }
                board.clear()
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        if interrupted {
            if terminal { print("") }
        } else {
            print("haul watch: the daemon stopped")
        }
    }
}

/// What `watch` shows: the running downloads, updated from events.
struct WatchBoard {
    private var downloads: [String: DownloadView] = [:]
    private var order: [String] = []
    let terminal: Bool
    private var drawnLines = 0
    private var lastDraw = Date.distantPast

    init(downloads: [DownloadView], terminal: Bool) {
        self.terminal = terminal
        for download in downloads { insert(download) }
    }

    func knows(_ id: String) -> Bool { downloads[id] != nil }

    mutating func insert(_ download: DownloadView) {
        if downloads[download.id] == nil { order.append(download.id) }
        downloads[download.id] = download
    }

    mutating func apply(_ event: EventView) {
        guard let id = event.id, var download = downloads[id] else { return }
        download.status = event.status ?? download.status
        if let completed = event.completedLength { download.completedLength = completed }
        if let total = event.totalLength { download.totalLength = total }
        download.speed = event.speed ?? (event.status == .running ? download.speed : 0)
        download.connections = event.connections ?? (event.status == .running ? download.connections : 0)
        if let maxConnections = event.maxConnections {
            download.maxConnections = maxConnections
            download.maxBytesPerSecond = event.maxBytesPerSecond
        }
        if let error = event.error { download.error = error }
        if let path = event.path { download.path = path }
        downloads[id] = download
        if event.type != .progress, event.type != .queued {
            // State changes stay on screen (or in the log) above the live bars.
            clear()
            print(
                "\(event.type.rawValue): \(download.id) \(download.fileName ?? download.url)"
                    + (event.error.map { " (\($0.message))" } ?? ""))
            fflush(nil)
        }
    }

    mutating func clear() {
        guard terminal, drawnLines > 0 else { return }
        print("\u{1B}[\(drawnLines)A\u{1B}[J", terminator: "")
        drawnLines = 0
    }

    /// Without a terminal, the running downloads once at the start; then state changes only.
    func printRunning() {
        for download in order.compactMap({ downloads[$0] }) where download.status == .running {
            print(DownloadLine.render(download))
        }
        fflush(nil)
    }

    mutating func draw(force: Bool) {
        guard terminal, force || Date().timeIntervalSince(lastDraw) >= 0.25 else { return }
        clear()
        let running = order.compactMap { downloads[$0] }.filter { $0.status == .running }
        let queued = downloads.values.filter { $0.status == .queued }.count
        let speed = running.reduce(0) { $0 + $1.speed }
        for download in running { print(DownloadLine.render(download)) }
        print("\(running.count) running, \(queued) queued, \(ByteFormatting.speed(speed)) (Ctrl-C to stop watching)")
        drawnLines = running.count + 1
        lastDraw = Date()
        fflush(nil)
    }
}
