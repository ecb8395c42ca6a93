import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A command the daemon or `haul get` runs on the user's behalf (`--refresh-command`, hooks),
/// started and waited for with a time limit.
///
/// Past its timeout, or when the waiting task is cancelled, it gets SIGKILL, not `terminate()`'s
/// SIGTERM: the daemon's service group ignores SIGTERM to handle it itself, and a child inherits
/// that, so SIGTERM would leave a hung command running.
public struct ChildProcess: Sendable {
    private let process: Process
    private let exited: AsyncStream<Void>

    /// Runs `process` (configured, not yet run); throws what `Process.run` throws.
    public init(running process: Process) throws {
        let (exited, exit) = AsyncStream.makeStream(of: Void.self)
        process.terminationHandler = { _ in
            exit.yield()
            exit.finish()
        }
        try process.run()
        self.process = process
        self.exited = exited
    }

    /// Waits until it exits, killing it after `timeout`. Returns false when the waiting task was
    /// cancelled (the command was killed for that, not for its timeout).
    public func wait(timeout: Duration) async -> Bool {
        let process = self.process
        let timer = Task {
            do {
                try await Task.sleep(for: timeout)
                Self.stop(process)
            } catch {
                // Cancelled: the command ended in time.
            }
        }
        let finished = await withTaskCancellationHandler {
            for await _ in exited {}
            return !Task.isCancelled
        } onCancel: {
            Self.stop(process)
        }
        timer.cancel()
        return finished
    }

    private static func stop(_ process: Process) {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
