import Foundation
import HaulCore

/// Obtains a fresh URL for a download whose signed URL expired (`--refresh-command CMD` on
/// `haul get` and `haul serve`; never set over an API, since it runs code on the host). The
/// command runs through `/bin/sh -c` with the download in its environment, never in its text:
/// `HAUL_ID`, `HAUL_URL` (the expired URL), `HAUL_PATH` (the file's final path, when known). It
/// prints the new URL as its first line of output and exits 0.
public struct URLRefresher: Sendable {
    public var command: String
    /// How long the command may run before it is killed.
    public var timeout: Duration

    public init(command: String, timeout: Duration = .seconds(60)) {
        self.command = command
        self.timeout = timeout
    }

    /// The most output read from the command.
    static let maxOutput = 64 << 10

    /// Reads until the command closes its output (past `maxOutput` the rest is drained), on a
    /// thread of its own: a blocking read that lasts as long as the command must hold neither
    /// one of the few threads every task runs on nor one of the blocking pool's.
    static func readAll(_ handle: FileHandle) async -> Result<Data, any Error> {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                var data = Data()
                do {
                    while let chunk = try handle.read(upToCount: 4096), !chunk.isEmpty {
                        if data.count < maxOutput { data.append(chunk) }
                    }
                    continuation.resume(returning: .success(data))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            thread.name = "haul refresh command output"
            thread.start()
        }
    }

    /// Runs the command for `record` and returns the URL it printed, or why there is none.
    public func refresh(_ record: DownloadRecord) async -> Result<RemoteURL, HaulError> {
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_ID"] = record.id.rawValue
        environment["HAUL_URL"] = record.request.url.absoluteString
        environment["HAUL_PATH"] = record.finalPath ?? ""
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        let child: ChildProcess
        do {
            child = try ChildProcess(running: process)
        } catch {
            return .failure(HaulError(.usage, "cannot run the refresh command: \(error)"))
        }
        let reader = Task { await Self.readAll(output.fileHandleForReading) }
        let cancelled = await !child.wait(timeout: timeout)
        if process.terminationReason == .uncaughtSignal {
            // Killed (its timeout, or a stop): what it started may still hold its output open, so
            // its reader is not waited for; it ends with them.
            return .failure(
                cancelled
                    ? HaulError(.interrupted, "the refresh command was stopped")
                    : HaulError(.usage, "the refresh command was killed by a signal (its time limit is \(timeout))"))
        }
        let data: Data
        switch await reader.value {
        case .success(let read): data = read
        case .failure(let error):
            return .failure(HaulError(.usage, "cannot read the refresh command's output: \(error)"))
        }
        if cancelled { return .failure(HaulError(.interrupted, "the refresh command was stopped")) }
        // Killed by a signal was answered above: it exited.
        guard process.terminationStatus == 0 else {
            return .failure(HaulError(.usage, "the refresh command exited with status \(process.terminationStatus)"))
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
        guard let line else { return .failure(HaulError(.usage, "the refresh command printed no URL")) }
        do throws(HaulError) {
            return .success(try RemoteURL(line))
        } catch {
            return .failure(HaulError(.usage, "the refresh command printed no usable URL: \(error.message)"))
        }
    }
}
