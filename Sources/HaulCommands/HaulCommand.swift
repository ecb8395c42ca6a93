import ArgumentParser
import HaulAPI
import HaulCore
import HaulServer

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

/// `haul`: the root command. `run` is the whole program; `main.swift` only calls it.
public struct HaulCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Resumable downloads that never corrupt.",
        discussion: """
            Exit codes: 0 success, 1 internal error, 2 bad usage or URL, 3 HTTP error, \
            4 network failure after retries, 5 length, checksum or server digest mismatch, 6 file-system error, \
            7 no daemon answers (or it refused the token), 8 no such download, \
            9 the download's state does not allow it, 10 the daemon refuses the directory, \
            11 the fleet's database cannot be reached, 12 the fleet's database refused the login, \
            13 the fleet's database has a newer schema than this haul, \
            14 the URL expired midway (bytes kept: give a new URL), 15 a cookie file that cannot be read or written, \
            16 another live haul serve uses this --fleet-name, 130 interrupted (run the same command again to resume).
            """,
        version: HaulVersion.current,
        subcommands: [
            GetCommand.self, ServeCommand.self, AddCommand.self, ListCommand.self, PauseCommand.self,
            ResumeCommand.self, RemoveCommand.self, URLsCommand.self, WatchCommand.self, PageCommand.self,
        ]
    )

    public init() {}

    /// The whole program: runs and exits with the status.
    public static func runAndExit() async -> Never {
        exit(with: await run())
    }

    /// `runAndExit` with the PostgreSQL fleet's store: `haul-fleet`'s whole program.
    public static func runAndExit(fleet: any FleetOpening) async -> Never {
        exit(with: await FleetExecutable.$opening.withValue(fleet) { await run() })
    }

    private static func exit(with status: Int32) -> Never {
        #if canImport(Glibc)
            Glibc.exit(status)
        #else
            Darwin.exit(status)
        #endif
    }

    /// Parses `arguments`, runs the command and returns the exit status. Usage errors exit 2
    /// with ArgumentParser's message, so every kind of bad input has its own status.
    public static func run(arguments: [String] = Array(CommandLine.arguments.dropFirst())) async -> Int32 {
        ProcessSignals.ignoreFileSizeAndPipeSignals()
        do {
            // The configuration file's options for get or serve, before the user's own.
            let loaded = try ConfigArguments.load(arguments, environment: ProcessInfo.processInfo.environment)
            var command = try parseAsRoot(loaded.arguments)
            // The file as read now: what `haul serve`'s reload compares its next reading with.
            try await ConfigArguments.$readAtStart.withValue(loaded.file) {
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
            }
            return ExitCodes.success
        } catch let exit as ExitCode {
            // The command printed its own messages.
            return exit.rawValue
        } catch let error as HaulError {
            StandardStreams.error("haul: \(error.message)\n")
            return ExitCodes.code(for: error)
        } catch let error as DaemonError {
            StandardStreams.error("haul: \(error.message)\n")
            return ExitCodes.code(for: error)
        } catch {
            guard let failure = failure(for: error) else {
                print(fullMessage(for: error))
                return ExitCodes.success
            }
            StandardStreams.error(failure.line + "\n")
            return failure.code
        }
    }

    /// What an error that is neither a `HaulError` nor an `ExitCode` exits with, and its one
    /// line on stderr; nil for ArgumentParser's clean exits (help, version). ArgumentParser's
    /// own parse and validation errors are bad usage (2), with where to read more. Anything
    /// else escaped the commands' own handling: an internal error (1), with its message.
    static func failure(for error: any Error) -> (code: Int32, line: String)? {
        let status = exitCode(for: error)
        if status == .success { return nil }
        let text = message(for: error).split(whereSeparator: \.isNewline).first.map(String.init) ?? "\(error)"
        if status == .validationFailure { return (ExitCodes.usage, "haul: \(text) (see 'haul --help')") }
        return (ExitCodes.internal, "haul: internal error: \(text.isEmpty ? "\(error)" : text)")
    }
}

enum ProcessSignals {
    /// A file-size limit must surface as EFBIG (a clear "disk full" error), not kill the process;
    /// a closed pipe as EPIPE.
    static func ignoreFileSizeAndPipeSignals() {
        signal(SIGXFSZ, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
    }
}

extension Limits {
    /// An option's value outside `bounds`, as a usage error naming the option (`-x`, `-j`).
    static func validate(_ value: Int?, in bounds: ClosedRange<Int>, option: String) throws {
        guard let value, let problem = problem(value, in: bounds, field: option) else { return }
        throw ValidationError(problem)
    }
}
