import NIOCore
import NIOPosix

/// Blocking calls (hashing, locks) on NIO's thread pool. The work runs as a future, so a task
/// that awaits it is never left with half-done work: cancellation is for the work to observe
/// (see `Verifier`), not for the pool to drop.
enum BlockingIO {
    static func run<T: Sendable>(on pool: NIOThreadPool = .singleton, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any(), body).get()
    }
}
