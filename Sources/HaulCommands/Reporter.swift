import Haul
import HaulAPI
import HaulCore

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

/// Everything `haul get` tells the user: progress (a screenful of running downloads and a
/// summary line, redrawn in place on a terminal; the summary every few seconds otherwise; JSON
/// lines with `--json`; nothing with `--quiet`), one result line per download, and one error
/// line per failure naming the URL and the cause.
///
/// Results come from the manager's outcomes, which are never dropped; progress comes from the
/// live figures, read at each tick; the event stream only adds retry and restart messages (and
/// every event with `--json`), so a dropped event costs a line of progress, never a result.
final class Reporter {
    enum Mode { case terminal, plain, json, quiet }

    let mode: Mode
    /// `-v`: what each download cost on the wire, when it ends.
    let verbose: Bool
    /// The URL of every download not finished yet, for messages: about 100 bytes each.
    private var urls: [DownloadID: String] = [:]
    /// Running downloads in the order they were first seen running: the screen keeps its rows.
    private var running: [DownloadID] = []
    /// The names the running downloads' files got (from Content-Disposition, a redirect, or a
    /// `.1` that keeps two files apart), read from their records once they have one.
    private var names: [DownloadID: String] = [:]
    /// Running downloads whose names are being read.
    private var asking: Set<DownloadID> = []
    private var live: [DownloadID: HaulCore.Progress] = [:]
    private var counts = ProgressDisplay.Counts()
    /// Bytes of the downloads that ended in this run: completed, or stopped with their bytes kept.
    private var finishedBytes: Int64 = 0
    private let started = Date()
    private var drawnLines = 0
    private var lastDraw = Date.distantPast
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Where the display goes, and the terminal's size: stderr and the kernel's, but for tests.
    private let output: (String) -> Void
    private let terminalSize: () -> (columns: Int, rows: Int)

    init(
        mode: Mode, verbose: Bool = false,
        output: @escaping (String) -> Void = { StandardStreams.error($0) },
        terminalSize: @escaping () -> (columns: Int, rows: Int) = TerminalSize.current
    ) {
        self.mode = mode
        self.verbose = verbose
        self.output = output
        self.terminalSize = terminalSize
    }

    /// How often progress is drawn: often on a terminal, a summary line every 5 s otherwise.
    var drawInterval: TimeInterval { mode == .terminal ? 0.2 : 5 }

    /// A download this command waits for.
    func added(_ record: DownloadRecord) {
        guard urls[record.id] == nil else { return }
        urls[record.id] = record.request.url.absoluteString
        counts.total += 1
    }

    /// A URL that never became a download (bad URL, refused by the manager).
    func rejected(url: String?, _ error: HaulError) {
        counts.total += 1
        counts.failed += 1
        failure(url: url, error)
    }

    /// Progress and notices. Final events are left to `settled`, which cannot miss one.
    func handle(_ event: DownloadEvent) {
        guard !event.isFinal, let url = urls[event.id] else { return }
        if mode == .json { emitJSON(event, url: url) }
        guard mode == .plain || mode == .terminal else { return }
        switch event.kind {
        case .retrying(_, let delay, let error):
            message("\(Self.naming(url, error)); retrying in \(NumberText.fixed(delay.seconds, places: 1)) s")
        case .restarted(let reason, _):
            message("\(url): \(reason)")
        default:
            break
        }
    }

    /// A download is done with, one way or another: its result line.
    func settled(_ outcome: DownloadOutcome) {
        guard let url = urls.removeValue(forKey: outcome.id) else { return }
        if let index = running.firstIndex(of: outcome.id) { running.remove(at: index) }
        live[outcome.id] = nil
        names[outcome.id] = nil
        let event = outcome.finalEvent
        if mode == .json { emitJSON(EventView(outcome), url: url) }
        let size = outcome.record?.completedLength ?? 0
        switch event.kind {
        case .completed(let path):
            counts.done += 1
            finishedBytes += size
            if mode == .plain || mode == .terminal { result("saved \(path) (\(ByteFormatting.size(size)))") }
        case .alreadyComplete(let path):
            counts.done += 1
            if mode == .plain || mode == .terminal {
                if outcome.record?.request.timestamping == true {
                    result("not modified on the server: \(path) is as new; nothing to download")
                } else {
                    result("already complete: \(path); nothing to download")
                }
            }
        case .failed(let error):
            counts.failed += 1
            if mode != .json { failure(url: url, error) }
        case .paused, .interrupted, .removed:
            counts.stopped += 1
            // Its bytes were transferred (a removed one's too, though deleted since).
            finishedBytes += size
            if mode != .json {
                message("\(url): stopped at \(ByteFormatting.size(size)); run the same command again to resume")
            }
        default:
            break
        }
        if verbose, mode == .plain || mode == .terminal {
            if let transfer = outcome.transfer { message("\(url): \(Self.describe(transfer))") }
            if case .completed = event.kind {
                message("\(url): \(Self.describe(verified: outcome.record?.expectedDigest))")
            }
        }
        draw(force: false)
    }

    /// `verified sha-256 from Repr-Digest`, `verified sha-256 from --checksum`: what the file was
    /// checked against before it got its name.
    static func describe(verified digest: ExpectedDigest?) -> String {
        guard let digest else {
            return "no digest verified (no --checksum, and the server sent none for the whole file)"
        }
        switch digest.origin {
        case .request: return "verified \(digest.checksum.algorithm.rawValue) from --checksum"
        case .server: return "verified \(digest)"
        }
    }

    /// `12 requests over 8 connections (8 TLS handshakes), HTTP/1.1`: what a run cost on the wire.
    /// Connections reused from another download's are used but not opened: on https the
    /// handshakes say how many were new; on http, "N new" when some were not.
    static func describe(_ transfer: TransferStats) -> String {
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        var text = "\(count(transfer.requests, "request")) over \(count(transfer.connectionsUsed, "connection"))"
        if transfer.usedTLS {
            text += " (\(count(transfer.tlsHandshakes, "TLS handshake")))"
        } else if transfer.connectionsOpened != transfer.connectionsUsed {
            text += " (\(transfer.connectionsOpened) new)"
        }
        if !transfer.httpVersions.isEmpty { text += ", " + transfer.httpVersions.sorted().joined(separator: " and ") }
        return text
    }

    /// The live figures of every running download, read by the command at each tick.
    func tick(_ progress: [DownloadID: HaulCore.Progress]) {
        live = progress.filter { urls[$0.key] != nil }
        running.removeAll { live[$0] == nil }
        let known = Set(running)
        running += live.keys.filter { !known.contains($0) }.sorted { $0.rawValue < $1.rawValue }
        draw(force: false)
    }

    /// The running downloads the terminal shows without their files' names yet. They count as
    /// asked for until `named` answers, so a slow answer is not asked for again.
    func namesWanted() -> [DownloadID] {
        guard mode == .terminal else { return [] }
        let wanted = running.filter { names[$0] == nil && !asking.contains($0) }
        asking.formUnion(wanted)
        return wanted
    }

    /// The answer to `namesWanted`: the names known among `asked` (a download not named yet is
    /// asked for again at the next tick).
    func named(_ found: [DownloadID: String], asked: [DownloadID]) {
        asking.subtract(asked)
        var changed = false
        for (id, name) in found where urls[id] != nil && names[id] != name {
            names[id] = name
            changed = true
        }
        if changed { draw(force: true) }
    }

    /// One line on stderr for a failure, whatever the mode (errors are never silenced).
    func failure(url: String?, _ error: HaulError) {
        let text = url.map { Self.naming($0, error) } ?? error.message
        if mode == .json {
            var line = EventView.error(error)
            line.error?.message = text
            writeJSON(line)
        }
        message(text)
    }

    /// The error's text, prefixed with the URL unless it names it already.
    static func naming(_ url: String, _ error: HaulError) -> String {
        error.message.contains(url) ? error.message : "\(url): \(error.message)"
    }

    /// The last summary, left on screen.
    func finish() {
        guard mode == .terminal || mode == .plain, counts.total > 1 else {
            clear()
            return
        }
        clear()
        writeLine(ProgressDisplay.summaryLine(summary(), width: nil))
    }

    // MARK: Drawing

    private func summary() -> ProgressDisplay.Summary {
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rows = running.compactMap { live[$0] }
        // Bytes left are known only when nothing waits with a size nobody has asked for yet.
        let queued = counts.total - counts.done - counts.failed - counts.stopped - rows.count
        let sizesKnown = queued <= 0 && rows.allSatisfy { $0.total != nil }
        return ProgressDisplay.Summary(
            counts: counts, running: rows.count,
            bytes: finishedBytes + rows.reduce(0) { $0 + $1.completed },
            bytesPerSecond: rows.reduce(0) { $0 + $1.bytesPerSecond },
            filesPerSecond: Double(counts.done + counts.failed) / elapsed,
            remainingBytes: sizesKnown ? rows.reduce(0) { $0 + max(0, ($1.total ?? 0) - $1.completed) } : nil)
    }

    private func rows() -> [ProgressDisplay.Row] {
        running.compactMap { id in
            guard let progress = live[id], let url = urls[id] else { return nil }
            // Alternatives for a display name, the URL itself last: nothing is lost.
            let name = names[id] ?? (try? RemoteURL(url))?.lastPathComponent ?? url
            return ProgressDisplay.Row(name: name, progress: progress)
        }
    }

    private func draw(force: Bool) {
        guard mode == .terminal || mode == .plain else { return }
        let now = Date()
        guard force || now.timeIntervalSince(lastDraw) >= drawInterval else { return }
        lastDraw = now
        if mode == .terminal {
            let size = terminalSize()
            let frame = ProgressDisplay.frame(rows: rows(), summary: summary(), width: size.columns, height: size.rows)
            clear()
            if !frame.isEmpty { output(frame.joined(separator: "\n") + "\n") }
            drawnLines = frame.count
        } else if counts.total > 0 {
            writeLine(ProgressDisplay.summaryLine(summary(), width: nil))
        }
    }

    private func message(_ text: String) {
        clear()
        output("haul: \(text)\n")
    }

    private func result(_ text: String) {
        clear()
        writeLine(text)
    }

    private func writeLine(_ text: String) {
        output("\(text)\n")
    }

    private func clear() {
        guard mode == .terminal, drawnLines > 0 else { return }
        output(String(repeating: "\u{1B}[1A\u{1B}[2K", count: drawnLines) + "\r")
        drawnLines = 0
    }

    // MARK: JSON

    /// The daemon's event schema (`EventView`), with the URL on every line.
    private func emitJSON(_ event: DownloadEvent, url: String) {
        emitJSON(EventView(event), url: url)
    }

    private func emitJSON(_ view: EventView, url: String) {
        var view = view
        view.url = url
        if let speed = view.speed { view.speed = speed.rounded() }
        writeJSON(view)
    }

    private func writeJSON(_ view: EventView) {
        do {
            try StandardStreams.output(Array(try encoder.encode(view)) + [UInt8(ascii: "\n")])
        } catch {
            // A number JSON cannot write (not finite), or standard output is gone: the line is
            // lost, so say so.
            StandardStreams.error("haul: cannot write a \(view.type.rawValue) event as JSON: \(error)\n")
        }
    }
}

/// The terminal's size, from the kernel; 80x24 when it cannot tell.
enum TerminalSize {
    static func current() -> (columns: Int, rows: Int) {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else {
            return (80, 24)
        }
        return (Int(size.ws_col), Int(size.ws_row))
    }
}
