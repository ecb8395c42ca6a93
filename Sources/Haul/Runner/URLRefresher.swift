import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Obtains a fresh URL for a download whose signed URL expired (`--refresh-command CMD` on
/// `haul get` and `haul serve`; never set over an API, since it runs code on the host). The
/// command runs through `/bin/sh -c` with the download in its environment, never in its text:
/// `HAUL_ID`, `HAUL_URL` (the expired URL), `HAUL_PATH` (the file's final path, when known). It
/// prints the new URL as its first line of output and exits 0.
public struct URLRefresher: Sendable {
    /// The shell command, run as `/bin/sh -c command`.
    public var command: String
    /// How long the command may run before it is killed.
    public var timeout: Duration

    /// A refresher running `command`, killed past `timeout` (a minute unless told).
    public init(command: String, timeout: Duration = .seconds(60)) {
        self.command = command
        self.timeout = timeout
    }

    /// The most output read from the command.
    static let maxOutput = 64 << 10

    /// Runs the command for `record` and returns the URL it printed, or why there is none.
    public func refresh(_ record: DownloadRecord) async -> Result<RemoteURL, HaulError> {
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_ID"] = record.id.rawValue
        environment["HAUL_URL"] = record.request.url.absoluteString
        environment["HAUL_PATH"] = record.finalPath ?? ""
        let child: ChildProcess
        do {
            child = try ChildProcess(
                "/bin/sh", arguments: ["-c", command], environment: environment, capturesOutput: true)
        } catch {
            return .failure(HaulError(.usage, "cannot run the refresh command: \(error.message)"))
        }
        let reader = Task { await child.readOutput(limit: Self.maxOutput) }
        let (termination, cancelled) = await child.wait(timeout: timeout)
        if case .killed = termination {
            // Killed (its timeout, or a stop): what it started may still hold its output open, so
            // its reader is not waited for; it ends with them.
            return .failure(
                cancelled
                    ? HaulError(.interrupted, "the refresh command was stopped")
                    : HaulError(.usage, "the refresh command was killed by a signal (its time limit is \(timeout))"))
        }
        let data: [UInt8]
        switch await reader.value {
        case .success(let read): data = read
        case .failure(let error):
            return .failure(HaulError(.usage, "cannot read the refresh command's output: \(error.message)"))
        }
        if cancelled { return .failure(HaulError(.interrupted, "the refresh command was stopped")) }
        if case .exited(let status) = termination, status != 0 {
            return .failure(HaulError(.usage, "the refresh command exited with status \(status)"))
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map(Self.trimmed).first { !$0.isEmpty }
        guard let line else { return .failure(HaulError(.usage, "the refresh command printed no URL")) }
        do throws(HaulError) {
            return .success(try RemoteURL(String(line)))
        } catch {
            return .failure(HaulError(.usage, "the refresh command printed no usable URL: \(error.message)"))
        }
    }

    /// The line without the blanks around it.
    private static func trimmed(_ line: Substring) -> Substring {
        var line = line
        while line.first?.isWhitespace == true { line.removeFirst() }
        while line.last?.isWhitespace == true { line.removeLast() }
        return line
    }
}
