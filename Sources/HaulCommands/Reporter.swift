import Foundation
import Haul
import HaulAPI
import HaulCore

/// Everything `haul get` tells the user: progress (redrawn in place on a terminal, a plain line
/// every few seconds otherwise, JSON lines with `--json`, nothing with `--quiet`), one result
/// line per download, and one error line per failure naming the URL and the cause.
final class Reporter {
    enum Mode { case terminal, plain, json, quiet }

    struct Line {
        var name: String
        var url: String
        var progress = Progress(completed: 0, total: nil, bytesPerSecond: 0)
        var state = "queued"
    }

    let mode: Mode
    private var lines: [DownloadID: Line] = [:]
    private var order: [DownloadID] = []
    private var drawnLines = 0
    private var lastDraw = Date.distantPast
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    init(mode: Mode) {
        self.mode = mode
    }

    var drawInterval: TimeInterval { mode == .terminal ? 0.2 : 5 }

    func track(_ record: DownloadRecord) {
        if lines[record.id] == nil { order.append(record.id) }
        lines[record.id] = Line(name: record.fileName ?? record.request.url.lastPathComponent ?? record.request.url.absoluteString,
                                url: record.request.url.absoluteString,
                                progress: Progress(completed: record.completedLength, total: record.expectedLength, bytesPerSecond: 0))
    }

    func handle(_ event: DownloadEvent) {
        guard var line = lines[event.id] else { return }
        if mode == .json { emitJSON(event, line: line) }
        switch event.kind {
        case .queued: line.state = "queued"
        case .started: line.state = "running"
        case .progress(let progress):
            line.progress = progress
            line.state = "running"
        case .retrying(let attempt, let delay, let error):
            line.state = "retry \(attempt) in \(ByteFormatting.duration(delay.seconds))"
            if mode == .plain || mode == .terminal {
                message("\(Self.naming(line.url, error)); retrying in \(String(format: "%.1f", delay.seconds)) s")
            }
        case .restarted(let reason, _):
            if mode == .plain || mode == .terminal { message("\(line.url): \(reason)") }
        case .paused, .interrupted:
            line.state = "stopped"
            if mode != .json { message("\(line.url): stopped at \(ByteFormatting.size(line.progress.completed)); run the same command again to resume") }
        case .completed(let path):
            line.state = "done"
            line.name = (path as NSString).lastPathComponent
            if let total = line.progress.total { line.progress.completed = total }
            if mode != .json && mode != .quiet { result("saved \(path) (\(ByteFormatting.size(line.progress.completed)))") }
        case .alreadyComplete(let path):
            line.state = "done"
            if mode != .json && mode != .quiet { result("already complete: \(path); nothing to download") }
        case .failed(let error):
            line.state = "failed"
            if mode != .json { failure(url: line.url, error) }
        case .removed:
            line.state = "removed"
        }
        lines[event.id] = line
        draw(force: event.isFinal)
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

    func finish() {
        draw(force: true)
    }

    // MARK: Output

    private func message(_ text: String) {
        clear()
        FileHandle.standardError.write(Data("haul: \(text)\n".utf8))
    }

    private func result(_ text: String) {
        clear()
        FileHandle.standardError.write(Data("\(text)\n".utf8))
    }

    private func clear() {
        guard mode == .terminal, drawnLines > 0 else { return }
        FileHandle.standardError.write(Data((String(repeating: "\u{1B}[1A\u{1B}[2K", count: drawnLines) + "\r").utf8))
        drawnLines = 0
    }

    private func draw(force: Bool) {
        guard mode == .terminal || mode == .plain else { return }
        let now = Date()
        guard force || now.timeIntervalSince(lastDraw) >= drawInterval else { return }
        lastDraw = now
        let visible = order.compactMap { lines[$0] }.filter { $0.state != "done" && $0.state != "failed" && $0.state != "removed" }
        if mode == .terminal {
            clear()
            let text = visible.map(render).joined(separator: "\n")
            if !text.isEmpty { FileHandle.standardError.write(Data((text + "\n").utf8)) }
            drawnLines = visible.count
        } else if !force {
            for line in visible where line.state == "running" {
                FileHandle.standardError.write(Data((render(line) + "\n").utf8))
            }
        }
    }

    func render(_ line: Line) -> String {
        let progress = line.progress
        let percent = progress.fraction.map { String(format: "%5.1f%%", $0 * 100) } ?? "    ?"
        let size = progress.total.map { "\(ByteFormatting.size(progress.completed)) / \(ByteFormatting.size($0))" }
            ?? ByteFormatting.size(progress.completed)
        let eta = progress.secondsRemaining.map { "ETA " + ByteFormatting.duration($0) } ?? ""
        let state = line.state == "running" ? "" : " [\(line.state)]"
        return "\(line.name.prefix(40))  \(percent)  \(size)  \(ByteFormatting.speed(progress.bytesPerSecond))  \(eta)\(state)"
    }

    // MARK: JSON

    /// The daemon's event schema (`EventView`), with the URL on every line.
    private func emitJSON(_ event: DownloadEvent, line: Line) {
        var view = EventView(event)
        view.url = line.url
        if let speed = view.speed { view.speed = speed.rounded() }
        writeJSON(view)
    }

    private func writeJSON(_ view: EventView) {
        guard let data = try? encoder.encode(view) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
