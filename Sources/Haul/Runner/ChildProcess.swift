import CChildProcess
import Dispatch
import HaulCore
import NIOConcurrencyHelpers

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

/// A command the daemon or `haul get` runs on the user's behalf (`--refresh-command`, hooks),
/// started with `posix_spawn` and waited for with a time limit. (Foundation's `Process` did this
/// before; it alone linked all of Foundation and its internationalization data into haul.)
///
/// - Its standard input is `/dev/null`; its output is the daemon's, or a pipe read by
///   ``readOutput(limit:)``; no other descriptor of haul's is left open in it.
/// - Its signals start at their defaults, none blocked: the daemon's service group ignores
///   SIGTERM to handle it itself, and a child would otherwise inherit that.
/// - Past its timeout, or when the waiting task is cancelled, it gets SIGKILL: a hung command
///   cannot hold a download or the daemon's shutdown.
public final class ChildProcess: Sendable {
    /// How it ended.
    public enum Termination: Sendable, Equatable {
        /// It exited by itself, with this status (0 for success).
        case exited(Int32)
        /// A signal ended it: `SIGKILL` past its timeout or on a cancelled wait, or any other.
        case killed(signal: Int32)
    }

    /// The process's id. Once the process has ended and been reaped, the system may give the id
    /// to another process: do not signal it yourself (`wait(timeout:)` kills it when needed).
    public let pid: pid_t
    /// The read end of its standard output, when it is captured and not yet given to a reader
    /// (which closes it when it is done).
    private let output: NIOLockedValueBox<Int32?>
    private let ended: AsyncStream<Termination>
    /// Set once the process is reaped: its pid may then name another process, so it is never
    /// signalled again.
    private let reaped = NIOLockedValueBox(false)

    /// Starts `executable` (an absolute path) with `arguments`; `environment` nil passes haul's own.
    public init(
        _ executable: String, arguments: [String], environment: [String: String]? = nil,
        capturesOutput: Bool = false
    ) throws(HaulError) {
        var pipeEnds: [Int32] = [-1, -1]
        if capturesOutput, pipe(&pipeEnds) != 0 {
            throw HaulError(.fileSystem, "cannot make a pipe for \(executable): \(String(cString: strerror(errno)))")
        }
        let spawned: Result<pid_t, HaulError> = Self.spawn(
            executable, arguments: arguments, environment: environment, output: capturesOutput ? pipeEnds : nil)
        if capturesOutput { close(pipeEnds[1]) }
        switch spawned {
        case .success(let pid): self.pid = pid
        case .failure(let error):
            if capturesOutput { close(pipeEnds[0]) }
            throw error
        }
        output = NIOLockedValueBox(capturesOutput ? pipeEnds[0] : nil)
        let (ended, end) = AsyncStream.makeStream(of: Termination.self)
        self.ended = ended
        let pid = self.pid
        let reaped = self.reaped
        // A blocking wait, on a thread of its own (a serial queue's thread comes from Dispatch's
        // overcommit pool): it lasts as long as the command, so it must hold none of the threads
        // every task runs on.
        DispatchQueue(label: "haul child \(pid)").async {
            end.yield(Self.waitForExit(pid, reaped: reaped))
            end.finish()
        }
    }

    deinit {
        if let output = output.withLockedValue({ $0 }) { close(output) }
    }

    /// Waits until it ends, killing it after `timeout`. `cancelled` when the waiting task was
    /// cancelled (it was killed for that, not for its timeout).
    public func wait(timeout: Duration) async -> (termination: Termination, cancelled: Bool) {
        let timer = Task { [self] in
            do {
                try await Task.sleep(for: timeout)
                signalKill()
            } catch {
                // Cancelled: the command ended in time.
            }
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            var termination = Termination.killed(signal: SIGKILL)
            for await ended in ended { termination = ended }
            return (termination, Task.isCancelled)
        } onCancel: {
            signalKill()
        }
    }

    /// Reads its standard output until the command and whatever it started close it: the first
    /// `limit` bytes are kept, the rest read and dropped. On a thread of its own, as the wait is.
    /// Once only: a second reader, or a command whose output is not captured, reads nothing.
    public func readOutput(limit: Int) async -> Result<[UInt8], HaulError> {
        guard
            let output = output.withLockedValue({ output in
                defer { output = nil }
                return output
            })
        else {
            return .success([])
        }
        return await withCheckedContinuation { continuation in
            DispatchQueue(label: "haul child \(pid) output").async {
                defer { close(output) }
                var kept: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                    if count == 0 { break }
                    if count < 0 {
                        if errno == EINTR { continue }
                        let reason = String(cString: strerror(errno))
                        continuation.resume(returning: .failure(HaulError(.fileSystem, "cannot read: \(reason)")))
                        return
                    }
                    if kept.count < limit { kept += chunk[0..<min(count, limit - kept.count)] }
                }
                continuation.resume(returning: .success(kept))
            }
        }
    }

    /// SIGKILL, unless it was already reaped.
    private func signalKill() {
        reaped.withLockedValue { reaped in
            if !reaped { _ = kill(pid, SIGKILL) }
        }
    }

    /// Waits for the exit without reaping it, then reaps it and marks it reaped at once, so a
    /// kill never reaches a process that took its pid.
    private static func waitForExit(_ pid: pid_t, reaped: NIOLockedValueBox<Bool>) -> Termination {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        return reaped.withLockedValue { reaped in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            reaped = true
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
            return status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .killed(signal: status & 0x7f)
        }
    }

    private static func spawn(
        _ executable: String, arguments: [String], environment: [String: String]?, output: [Int32]?
    ) -> Result<pid_t, HaulError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output {
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        }
        // Every descriptor past standard error closed in the child, whatever its flags (without
        // glibc 2.34, those haul opens close-on-exec, as all of its own and NIO's are).
        let closing = haul_spawn_close_from(&actions, 3)
        guard closing == 0 || closing == ENOSYS else {
            return .failure(HaulError(.usage, "cannot run \(executable): \(String(cString: strerror(closing)))"))
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            return .failure(HaulError(.usage, "cannot run \(executable): \(String(cString: strerror(result)))"))
        }
        return .success(pid)
    }
}
