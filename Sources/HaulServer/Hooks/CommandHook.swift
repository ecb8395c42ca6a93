import Haul
import HaulCore
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

/// A program run when a download ends, with the arguments aria2 gives its `on-download-*`
/// commands: the id (haul's download id, which aria2's RPC also uses as the GID), the number of
/// files (always 1) and the file's path. No shell: the arguments go to the program as they are,
/// so a file name cannot become a command. Its output goes where the daemon's does.
public struct CommandHook: Sendable, Hashable {
    /// The program's absolute path.
    public var executable: String
    /// How long it may run before it is killed.
    public var timeout: Duration

    /// `command` is a path (`./notify.sh`, `/usr/local/bin/notify`) or a name looked up in
    /// `PATH`; it must name an executable file now. `option` names the flag in the error.
    public init(
        _ command: String, option: String, timeout: Duration = .seconds(300),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(HaulError) {
        guard !command.isEmpty, !command.allSatisfy(\.isWhitespace) else {
            throw HaulError(.usage, "\(option) needs a program")
        }
        let candidates: [String]
        if command.contains("/") {
            candidates = [command.hasPrefix("/") ? command : FileManager.default.currentDirectoryPath + "/" + command]
        } else {
            candidates = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map {
                "\($0)/\(command)"
            }
        }
        guard
            let found = candidates.first(where: { access($0, X_OK) == 0 && FileKind($0) == .file })
        else {
            throw HaulError(
                .usage,
                """
                \(option): '\(command)' is not an executable file (a program, run without a shell, as 'PROGRAM ID \
                1 PATH')
                """
            )
        }
        self.executable = URL(fileURLWithPath: found).standardizedFileURL.path
        self.timeout = timeout
    }

    /// The arguments aria2 would pass: GID, number of files, first file's path.
    static func arguments(for id: DownloadID, path: String) -> [String] {
        [id.rawValue, "1", path]
    }

    /// Runs it and waits for it; a failure to start, a non-zero exit or a timeout is logged,
    /// never thrown: a hook cannot stop the daemon.
    func run(id: DownloadID, path: String, logger: Logger) async {
        let metadata: Logger.Metadata = ["id": "\(id)", "command": "\(executable)"]
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, arguments: Self.arguments(for: id, path: path))
        } catch {
            logger.error("cannot run the hook command: \(error.message)", metadata: metadata)
            return
        }
        switch await child.wait(timeout: timeout).termination {
        case .exited(0):
            logger.debug("hook command done", metadata: metadata)
        case .exited(let status):
            logger.warning("the hook command exited with status \(status)", metadata: metadata)
        case .killed(let signal):
            logger.warning("the hook command was killed (signal \(signal), timeout \(timeout))", metadata: metadata)
        }
    }
}
