import ArgumentParser
import HaulCore
import HaulServer
import NIOConcurrencyHelpers

/// `haul serve`'s configuration file read again on SIGHUP: the options whose lines changed since
/// the last reading (or the start), the live ones among them with the values the whole command
/// line now gives (the command line still wins), and the others named as needing a restart.
final class ServeReload: Sendable {
    /// The options a running daemon changes, by every name a file may give them.
    static let liveOptions: [String: String] = [
        "jobs": "jobs", "j": "jobs", "connections": "connections", "x": "connections",
        "limit-rate": "limit-rate", "limit-schedule": "limit-schedule",
    ]

    /// The command line after `haul`, as typed.
    private let arguments: [String]
    private let environment: [String: String]
    /// The serve section's lines at the last reading, by option.
    private let lines: NIOLockedValueBox<[String: [String]]>

    /// Reloads compared first with `file`, the one the start read (nil: none).
    init(arguments: [String], environment: [String: String], file: ConfigFile?) {
        self.arguments = arguments
        self.environment = environment
        lines = NIOLockedValueBox(Self.lines(file))
    }

    /// One reload: reads and checks the file and the command line as a start would. Throws the
    /// start's one-line error for a file that does not read; the last reading then still counts.
    func reload() throws(HaulError) -> SettingsReload {
        let loaded = try ConfigArguments.load(arguments, environment: environment)
        guard let path = loaded.path else {
            throw HaulError(.usage, "haul serve runs with --no-config: there is no file to read again")
        }
        let command: ServeCommand
        do {
            command = try ServeCommand.parse(Array(loaded.arguments.dropFirst()))
        } catch {
            throw HaulError(.usage, "\(path): \(ServeCommand.message(for: error))")
        }
        let new = Self.lines(loaded.file)
        let changed = lines.withLockedValue { Self.changedOptions(from: $0, to: new) }
        var changes: [SettingsReload.Change] = []
        let live = Set(changed.compactMap { Self.liveOptions[$0] })
        do {
            if live.contains("jobs") { changes.append(.maxConcurrentDownloads(command.jobs)) }
            if live.contains("connections") { changes.append(.defaultConnections(command.connections)) }
            if live.contains("limit-rate") {
                changes.append(.maxBytesPerSecond(try command.engine.maxBytesPerSecond()))
            }
            if live.contains("limit-schedule") { changes.append(.limitSchedule(try command.hookOptions.schedule())) }
        } catch {
            throw HaulError(.usage, "\(path): \(ServeCommand.message(for: error))")
        }
        lines.withLockedValue { $0 = new }
        return SettingsReload(
            file: path, changes: changes, needsRestart: changed.filter { Self.liveOptions[$0] == nil })
    }

    /// The serve section's values by option as the file spells it, in the file's order.
    static func lines(_ file: ConfigFile?) -> [String: [String]] {
        var lines: [String: [String]] = [:]
        for entry in file?.entries(for: .serve) ?? [] {
            lines[entry.key, default: []].append(entry.value)
        }
        return lines
    }

    /// The options whose values differ, sorted: added, removed or changed lines.
    static func changedOptions(from old: [String: [String]], to new: [String: [String]]) -> [String] {
        Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }.sorted()
    }
}
