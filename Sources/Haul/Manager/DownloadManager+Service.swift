import HaulCore
import Logging
import NIOCore
import ServiceLifecycle

/// The manager as one loop: `run()` reads one inbox (callers' changes with their continuations,
/// adds, runs' transfer ends and ends) and carries each out in order, as `RunSession` does for
/// one download. Everything the manager runs is a child of its task group: the loop, each
/// download's run, a fleet host's loop, another host's remove applied here, the host budgets'
/// expiry, and the shutdown (handed over by `spawn`, not through the inbox, so that a change
/// that takes long cannot hold them back).
///
/// Nothing starts by itself: a program calls `withManager(configuration:_:)` (or `withRunning`
/// on a manager it made), or lists the manager in a `ServiceGroup`, whose graceful shutdown
/// stops it as `shutdown(deadline: configuration.shutdownDeadline)` does. An operation on a
/// manager that nobody runs throws a usage error that says so.
extension DownloadManager: Service {
    /// Where the manager's loop stands (`ManagerLifecycle`, which decides), and what it owns.
    struct ServiceState {
        var lifecycle = ManagerLifecycle()
        /// Queue changes posted to the inbox, oldest first: each `.change` takes the first.
        var turns = CircularBuffer<Turn>()
        /// Finished once the shutdown is done.
        let stopped = Completion()
    }

    /// What the loop reads, in the order it was posted.
    enum Message: Sendable {
        /// A caller's queue change (the first of `service.turns`): carried out to its end before
        /// the next message.
        case change
        /// A caller's adds: those waiting together are carried out as one batch (group commit).
        case add(AddLine.Waiting)
        /// A run's transfer ended; its finish goes on (`DownloadQueue.transferEnded`).
        case transferEnded(DownloadID, generation: UInt64, finishBytes: Int64)
        /// A run returned; `ended` is finished once its end is settled.
        case runEnded(DownloadID, generation: UInt64, DownloadQueue.RunEnding, ended: Completion)
        /// A probe's response needs a slot (`DownloadQueue.slotAsked`).
        case slotAsked(DownloadID, generation: UInt64)
        /// A host answered a probe over HTTP/2 (`DownloadQueue.spokeHTTP2`).
        case spokeHTTP2(String)
    }

    /// One queue change: what it does, and how its caller hears it will not run.
    struct Turn {
        var run: () async -> Void
        var refuse: (HaulError) -> Void
    }

    /// A piece of work for the task group.
    typealias Work = @Sendable () async -> Void

    /// Adds carried out together, each caller answered with its own records.
    typealias AddLine = BatchLine<Int, AddBatch, AddedBatch>

    /// Runs until the manager shuts down; a graceful shutdown of its service group shuts it
    /// down (with `configuration.shutdownDeadline`). Called once: a second call returns at once.
    public func run() async {
        guard service.lifecycle.runCalled() else {
            configuration.logger.debug("run() of a manager that runs or has run returns at once")
            return
        }
        let deadline = configuration.shutdownDeadline
        await withGracefulShutdownHandler {
            await self.loop()
        } onGracefulShutdown: {
            // A child of the loop's group, like every other piece of work.
            self.spawn { await self.shutdown(deadline: deadline) }
        }
    }

    /// Says that `run()` is on its way (a service group about to start): operations from now on
    /// wait in the inbox for it instead of being refused. Throws once the manager has run.
    public func prepareToRun() throws(HaulError) {
        try service.lifecycle.prepare()
    }

    /// Runs the manager for as long as `body` runs, then shuts it down (waiting for its runs to
    /// checkpoint), however `body` ends. The manager is `body`'s to use, and nobody's after.
    public nonisolated func withRunning<Result>(_ body: (DownloadManager) async throws -> Result) async throws
        -> Result
    {
        try await prepareToRun()
        return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
            group.addTask { await self.run() }
            do {
                let result = try await body(self)
                await shutdown()
                return result
            } catch {
                await shutdown()
                throw error
            }
        }
    }

    /// The task group: the inbox's reader, the host budgets' expiry, and every piece of work
    /// handed to it (`spawn`: runs, a fleet loop, a remove another host asked for, the
    /// shutdown), until the shutdown ends both. Work does not wait in the inbox: a change that
    /// takes long (a fleet's statement, up to its time limit) must not hold back the shutdown.
    private nonisolated func loop() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.budgets.run() }
            group.addTask { await self.readInbox() }
            for await work in children.stream {
                group.addTask { await work() }
            }
        }
        await loopEnded()
    }

    /// The loop proper: every message, in order, until the shutdown closes the inbox.
    private nonisolated func readInbox() async {
        while let messages = await inbox.next() {
            var adds: [AddLine.Waiting] = []
            // Adds read together are one batch, carried out before the first message after them.
            for message in messages {
                switch message {
                case .add(let waiting):
                    adds.append(waiting)
                case .change:
                    await carryOut(&adds)
                    await takeTurn()
                case .transferEnded(let id, let generation, let finishBytes):
                    await carryOut(&adds)
                    await transferEnded(id, generation: generation, finishBytes: finishBytes)
                case .runEnded(let id, let generation, let ending, let ended):
                    await carryOut(&adds)
                    await finished(id, generation: generation, ending)
                    ended.finish()
                case .slotAsked(let id, let generation):
                    await carryOut(&adds)
                    await slotAsked(id, generation: generation)
                case .spokeHTTP2(let host):
                    await carryOut(&adds)
                    await spokeHTTP2(host)
                }
            }
            await carryOut(&adds)
        }
    }

    /// Carries out adds that waited together as one batch; a batch that fails is carried out
    /// again caller by caller, so one caller's bad request fails only that caller.
    private nonisolated func carryOut(_ adds: inout [AddLine.Waiting]) async {
        defer { adds = [] }
        await AddLine.answer(
            adds, perform: { batches in try await self.addTogether(batches) },
            failure: .eachAlone(onSplit: { [logger = configuration.logger] count, error in
                logger.debug(
                    "a batch of adds failed; each caller's is added alone",
                    metadata: ["callers": "\(count)", "error": "\(error)"])
            }))
    }

    /// The group is the scope the manager's transport and store are used in (every run and fleet
    /// loop is its child): however it ends, they are released as it ends. Cancelled without a
    /// shutdown, or before the shutdown's own work ran, the shutdown's work is done here
    /// (AsyncHTTPClient's client and sqlite-nio's connection trap in their deinit otherwise).
    private func loopEnded() async {
        service.lifecycle.loopEnded()
        // Cancelled: what still waits in the inbox will never be read.
        refuse(inbox.close(keep: false))
        await stopEverything(deadline: nil)
    }

    /// Answers messages nobody will read: changes and adds are refused, runs' ends settled.
    func refuse(_ messages: [Message]) {
        for message in messages {
            switch message {
            case .change: service.turns.popFirst()?.refuse(Self.shutDown)
            case .add(let waiting): waiting.continuation.resume(throwing: Self.shutDown)
            case .runEnded(_, _, _, let ended): ended.finish()
            case .transferEnded, .slotAsked, .spokeHTTP2: break
            }
        }
    }

    /// Throws unless the loop runs (or is on its way): an operation would otherwise wait forever.
    func checkRunning() throws(HaulError) {
        try service.lifecycle.checkOperation()
    }

    /// Hands `job` to the task group (a run, a fleet loop, a remove another host asked for).
    nonisolated func spawn(_ job: @escaping Work) {
        if case .terminated = children.continuation.yield(job) {
            configuration.logger.debug("work handed to a manager that has shut down is dropped")
        }
    }

    /// Runs `body` as the loop's next change: queue changes (add, pause, resume, move, remove,
    /// restore) run one at a time, in the order they were asked for, each to its end, since
    /// every await inside one lets another call in between a check and the write that depends
    /// on it. It runs in the loop, not the caller's task: a caller that is cancelled does not
    /// cancel a change half made.
    func inTurn<T: Sendable>(_ body: @escaping () async throws -> T) async throws -> T {
        try checkRunning()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            guard inbox.post(.change) else { return continuation.resume(throwing: Self.shutDown) }
            service.turns.append(
                Turn(
                    run: {
                        do {
                            continuation.resume(returning: try await body())
                        } catch {
                            continuation.resume(throwing: error)
                        }
                    }, refuse: { continuation.resume(throwing: $0) }))
        }
    }

    /// Carries out the oldest queue change (a `.change` read from the inbox).
    private func takeTurn() async {
        await service.turns.popFirst()?.run()
    }

    /// One caller's adds, carried out together with every other caller's that waits in the
    /// inbox with it (group commit: eight clients adding one download each cost one transaction
    /// and one fsync).
    func submitAdd(_ batch: AddBatch) async throws -> AddedBatch {
        try checkRunning()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AddedBatch, any Error>) in
            if !inbox.post(.add(.init(request: batch, continuation: continuation))) {
                continuation.resume(throwing: Self.shutDown)
            }
        }
    }

    /// Queue changes and adds waiting in the inbox (a test waits for them, told by `observeInbox`).
    nonisolated var waitingTurns: Int { inbox.count { if case .change = $0 { true } else { false } } }
    nonisolated var waitingAdds: Int { inbox.count { if case .add = $0 { true } else { false } } }
    nonisolated var waitingRunEnds: Int { inbox.count { if case .runEnded = $0 { true } else { false } } }

    /// Calls `observer` at every change of the inbox.
    nonisolated func observeInbox(_ observer: @escaping @Sendable () -> Void) { inbox.observe(observer) }

    static var shutDown: HaulError { ManagerLifecycle.shutDown }

    /// Ends the loop once the shutdown is done: what was posted already is still read (and finds
    /// the manager shut down), later posts are refused.
    func endLoop() {
        budgets.close()
        inbox.close(keep: true)
        children.continuation.finish()
    }
}
