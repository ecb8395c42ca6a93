import ArgumentParser
import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `haul get` and `haul serve` with their configuration file: the file's options for the
/// command go on the command line before the user's own, so an option given on both takes the
/// command line's value. Each line is checked by the command's own parser, alone, so a bad line
/// is named by its number and nothing starts.
enum ConfigArguments {
    /// `$XDG_CONFIG_HOME/haul/config`, else `~/.config/haul/config`.
    static func defaultPath(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return Paths.join(config, "haul/config")
        }
        return Paths.join(HaulHome.userHome(environment: environment), ".config/haul/config")
    }

    /// The configuration file the running command was started with (nil: none read).
    @TaskLocal static var readAtStart: ConfigFile?

    /// What `load` reads: the command line with the file's options, and the file (nil when none
    /// was read). `path` is the file's place when one would be read, present or not.
    struct Loaded: Sendable {
        var arguments: [String]
        var file: ConfigFile?
        var path: String?
    }

    /// The command line after `haul`, with the configuration file's options for its command
    /// right after the command's name; as it was for another command, with `--no-config`, or
    /// when there is no file at the default place (`--config FILE` must name one).
    static func load(_ arguments: [String], environment: [String: String]) throws(HaulError) -> Loaded {
        guard let command = arguments.first, let section = ConfigFile.Section(rawValue: command) else {
            return Loaded(arguments: arguments)
        }
        let rest = Array(arguments.dropFirst())
        var given: String?
        for (index, argument) in rest.enumerated() {
            if argument == "--" { break }
            if argument == "--no-config" { return Loaded(arguments: arguments) }
            if argument == "--config", index + 1 < rest.count { given = rest[index + 1] }
            if argument.hasPrefix("--config=") { given = String(argument.dropFirst("--config=".count)) }
        }
        let path = given.map { HaulHome.absolute($0) } ?? defaultPath(environment: environment)
        let text: String
        switch readText(path) {
        case .success(let read): text = read
        case .failure(let reason):
            if given == nil, reason.code == ENOENT { return Loaded(arguments: arguments, path: path) }
            throw HaulError(.usage, "\(path): cannot read the configuration file: \(reason.text)")
        }
        let file = try ConfigFile(parsing: text, path: path)
        var options: [String] = []
        for entry in file.entries(for: section) {
            options += try commandLine(for: entry, in: file)
        }
        return Loaded(arguments: [command] + options + rest, file: file, path: path)
    }

    /// The entry as command-line arguments, checked against every command it applies to.
    static func commandLine(for entry: ConfigFile.Entry, in file: ConfigFile) throws(HaulError) -> [String] {
        let place = "\(file.path):\(entry.line)"
        guard entry.key != "config", entry.key != "no-config" else {
            throw HaulError(.usage, "\(place): '\(entry.key)' cannot be set in a configuration file")
        }
        let sections = entry.section.map { [$0] } ?? ConfigFile.Section.allCases
        func refusal(_ arguments: [String]) -> String? {
            sections.lazy.compactMap { Self.refusal(of: arguments, by: $0) }.first
        }
        var firstRefusal: String?
        // A flag (`true`, `false`) or an option with its value, in that order of preference.
        var forms: [[String]] = [option(entry.key) + [entry.value]]
        if entry.value == "true" { forms.insert(option(entry.key), at: 0) }
        if entry.value == "false" { forms.insert(contentsOf: [option("no-" + entry.key), []], at: 0) }
        if entry.value != "true", entry.value != "false", sections.allSatisfy({ isFlag(entry.key, in: $0) }) {
            // A flag with a value would leave the value to stand as a URL, say.
            throw HaulError(.usage, "\(place): \(entry.key) is a flag: true or false, not '\(entry.value)'")
        }
        for arguments in forms {
            guard let why = refusal(arguments) else { return arguments }
            firstRefusal = firstRefusal ?? why
        }
        if entry.key.hasSuffix("-file"), entry.key.count > "-file".count {
            // A secret kept in a file of its own, when the option itself does not read a file.
            let base = String(entry.key.dropLast("-file".count))
            switch readText(HaulHome.absolute(entry.value)) {
            case .success(let text):
                let arguments = option(base) + [String(text.trimmed(where: \.isNewline))]
                if refusal(arguments) == nil { return arguments }
            case .failure(let reason):
                if refusal(option(base) + ["x"])?.hasPrefix("unknown option") != true {
                    throw HaulError(.usage, "\(place): \(entry.key): cannot read \(entry.value): \(reason.text)")
                }
            }
        }
        let scope =
            entry.section == nil && sections.count > 1
            ? " (keys before any section apply to both haul get and haul serve)" : ""
        throw HaulError(.usage, "\(place): \(firstRefusal ?? "unknown option '\(entry.key)'")\(scope)")
    }

    private static func option(_ key: String) -> [String] {
        [key.count == 1 ? "-" + key : "--" + key]
    }

    /// Whether `--key` alone, after everything else, is taken: a flag, not an option that needs a
    /// value (refused alone, it needs one, or is no option, which `refusal` then says).
    private static func isFlag(_ key: String, in section: ConfigFile.Section) -> Bool {
        parserMessage(option(key), by: section, afterURL: true) == nil
    }

    /// Why `section`'s parser refuses `arguments` alone, or nil when it takes them.
    private static func refusal(of arguments: [String], by section: ConfigFile.Section) -> String? {
        guard let message = parserMessage(arguments, by: section, afterURL: false) else { return nil }
        if message.hasPrefix("Unknown option") || message.hasPrefix("Unexpected argument") {
            let key = arguments.first.map { String($0.drop(while: { $0 == "-" })) } ?? ""
            return section == .get ? "unknown option '\(key)'" : "unknown option '\(key)' for haul \(section.rawValue)"
        }
        return "\(arguments.joined(separator: " ")): \(message)"
    }

    /// What `section`'s parser says of `arguments`, nil when it takes them. For `get` a URL stands
    /// in for the one it needs, before them or after them.
    private static func parserMessage(_ arguments: [String], by section: ConfigFile.Section, afterURL: Bool) -> String?
    {
        do {
            switch section {
            case .get:
                let url = ["http://127.0.0.1/"]
                _ = try GetCommand.parse(afterURL ? url + arguments : arguments + url)
            case .serve: _ = try ServeCommand.parse(arguments)
            }
            return nil
        } catch {
            return switch section {
            case .get: GetCommand.message(for: error)
            case .serve: ServeCommand.message(for: error)
            }
        }
    }

    /// A file's text, or why it cannot be read; a configuration file is small, so past a
    /// megabyte it is something else.
    private static func readText(_ path: String) -> Result<String, StandardStreams.ReadFailure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(StandardStreams.ReadFailure(errno)) }
        defer { close(descriptor) }
        return StandardStreams.readAll(from: descriptor, limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) }
    }
}
