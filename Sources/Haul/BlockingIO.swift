import HaulCore
import NIOPosix

/// Blocking calls on a thread pool, never on Swift's cooperative pool (as many threads as cores:
/// one call stuck on a disk there stalls every task of the process).
///
/// The awaiting task is resumed straight from the pool's thread (no hop through an event loop),
/// and the work is never abandoned: a task that awaits it is never left with half-done work, so
/// cancellation is for the work to observe (see `Verifier`), not for the pool to drop. (NIO's
/// `runIfActive(_:)` drops work still queued when its task is cancelled.)
enum BlockingIO {
    static func run<T: Sendable>(on pool: NIOThreadPool = .singleton, _ body: @escaping @Sendable () throws -> T)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            pool.submit { state in
                guard case .active = state else {
                    continuation.resume(
                        throwing: HaulError(.internal, "blocking file work after its threads were shut down"))
                    return
                }
                continuation.resume(with: Result(catching: body))
            }
        }
    }
}
