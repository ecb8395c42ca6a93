import HaulCore
import Logging
import ServiceLifecycle

/// The manager as a `Service`: `run()` owns one task group, and everything the manager runs
/// is a child of it: each download's run, the queue's turns (queue changes one at a time, adds
/// batched), a fleet host's loop, another host's remove applied here, and the shutdown.
///
/// A daemon lists the manager in its `ServiceGroup`: a graceful shutdown stops it as
/// `shutdown(deadline: configuration.shutdownDeadline)` does. A program that never calls `run()`
/// (README's library example, `haul get`) needs nothing more: the manager's first operation
/// starts `run()` in a task of its own, which `shutdown()` ends.
extension DownloadManager: Service {
    /// What runs the manager's work, and where it stands.
    struct ServiceState {
        enum Loop {
            /// Nothing ran yet.
            case idle
            /// Started by the manager's first operation, in a task of its own.
            case selfStarted(Task<Void, Never>)
            /// Inside a caller's `run()` (a service group's).
            case running
            /// The task group has ended: nothing more runs.
            case ended
        }

        var loop = Loop.idle
        /// Queue changes waiting for their turn, oldest first (`inTurn`).
        var turns: [Turn] = []
        /// Set once the shutdown is done (or the group was cancelled): a later change is refused.
        var turnsEnded = false
        /// Adds waiting to be carried out together in the next add turn (`submitAdd`).
        var adds: [BatchLine<Int, AddBatch, AddedBatch>.Waiting] = []
        var addTurnQueued = false
        /// Set by the first `shutdown` (or the group's end without one); finished once it is done.
        var shutdown: Completion?
        /// Set once the shutdown's work has begun (`stopEverything`): it is done only once.
        var stopped = false
    }

    /// One queue change: what it does, and how its caller hears it will not run.
    struct Turn {
        var run: () async -> Void
        var refuse: (HaulError) -> Void
    }

    /// A piece of work for the task group.
    typealias Work = @Sendable () async -> Void

    /// Runs until the manager shuts down; a graceful shutdown of its service group shuts it
    /// down (with `configuration.shutdownDeadline`). Called once; a manager that already runs by
    /// itself (an operation came first) is stopped by this call's graceful shutdown as well.
    public func run() async {
        let deadline = configuration.shutdownDeadline
        // Sent to the task group: the shutdown is one of its children.
        let stopGracefully: @Sendable () -> Void = { [jobs] in
            jobs.continuation.yield { await self.shutdown(deadline: deadline) }
        }
        switch service.loop {
        case .idle:
            service.loop = .running
            await withGracefulShutdownHandler {
                await self.loop()
            } onGracefulShutdown: {
                stopGracefully()
            }
        case .selfStarted(let task):
            // Its task is no child of this one: a cancellation of the caller (a service group
            // cancelled, or past its graceful shutdown's limit) is handed on, as `.running` gets it.
            await withTaskCancellationHandler {
                await withGracefulShutdownHandler {
                    await task.value
                } onGracefulShutdown: {
                    stopGracefully()
                }
            } onCancel: {
                task.cancel()
            }
        case .running, .ended:
            return
        }
    }

    /// The task group: the queue's turns, and every job handed to it, until the shutdown ends
    /// the jobs.
    private nonisolated func loop() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.takeTurns() }
            group.addTask { await self.budgets.run() }
            for await job in jobs.stream {
                group.addTask { await job() }
            }
        }
        await loopEnded()
    }

    /// The group is the scope the manager's transport and store are used in (every run, turn
    /// and fleet loop is its child): however it ends, they are released as it ends. Cancelled
    /// without a shutdown, or before the shutdown's own job ran, the shutdown's work is done here
    /// (AsyncHTTPClient's client and sqlite-nio's connection trap in their deinit otherwise).
    private func loopEnded() async {
        service.loop = .ended
        // Cancelled without a shutdown: nothing will take a turn any more.
        refuseTurns()
        if service.shutdown == nil { service.shutdown = Completion() }
        await stopEverything(deadline: nil)
    }

    /// Starts `run()` in a task of its own when no one runs it. Throws once it has ended.
    func startIfNeeded() throws(HaulError) {
        switch service.loop {
        case .idle:
            service.loop = .selfStarted(Task { await self.loop() })
        case .selfStarted, .running:
            break
        case .ended:
            throw Self.shutDown
        }
    }

    /// Hands `job` to the task group (a run, a fleet loop, a remove another host asked for).
    func spawn(_ job: @escaping Work) {
        do {
            try startIfNeeded()
        } catch {
            configuration.logger.debug("work handed to a manager that has shut down is dropped")
            return
        }
        spawnRunning(job)
    }

    /// The same, from outside the actor, once the group runs (a run's callbacks).
    nonisolated func spawnRunning(_ job: @escaping Work) {
        if case .terminated = jobs.continuation.yield(job) {
            configuration.logger.debug("work handed to a manager that has shut down is dropped")
        }
    }

    // MARK: Turns

    /// Runs `body` in the queue's next turn: queue changes (add, pause, resume, move, remove,
    /// restore) run one at a time, in the order they were asked for, each to its end, since
    /// every await inside one lets another call in between a check and the write that depends
    /// on it. The turn runs in the manager's task group, not the caller's task: a caller that
    /// is cancelled does not cancel a change half made.
    func inTurn<T: Sendable>(_ body: @escaping () async throws -> T) async throws -> T {
        try startIfNeeded()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            queueTurn(
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

    /// Queue changes waiting for their turn.
    var waitingTurns: Int { service.turns.count }

    private func queueTurn(_ turn: Turn) {
        guard !service.turnsEnded else {
            turn.refuse(Self.shutDown)
            return
        }
        service.turns.append(turn)
        turnWakes.continuation.yield()
    }

    static var shutDown: HaulError { HaulError(.interrupted, "the download manager has shut down") }

    /// Takes the turns, one at a time, until the shutdown has ended them.
    private func takeTurns() async {
        for await _ in turnWakes.stream {
            while !service.turns.isEmpty {
                let turn = service.turns.removeFirst()
                await turn.run()
            }
        }
        // Ended by the shutdown, or cancelled with the group.
        refuseTurns()
    }

    /// No turn runs any more: those still waiting are refused, and so is every later one.
    private func refuseTurns() {
        service.turnsEnded = true
        let left = service.turns
        service.turns = []
        for turn in left { turn.refuse(Self.shutDown) }
    }

    /// Ends the turns and the task group once the shutdown is done: turns already asked for
    /// still run (and find the manager shut down), later ones are refused.
    func endTurns() {
        turnWakes.continuation.finish()
        budgets.close()
        jobs.continuation.finish()
    }

    // MARK: Adds

    /// Callers' adds waiting for the next add turn.
    var waitingAdds: Int { service.adds.count }

    /// The adds that waited for this add turn; later ones queue the next.
    private func takeAdds() -> [BatchLine<Int, AddBatch, AddedBatch>.Waiting] {
        service.addTurnQueued = false
        defer { service.adds = [] }
        return service.adds
    }

    /// One caller's adds, carried out in the next add turn together with every other caller's
    /// that waits for it (group commit: eight clients adding one download each cost one
    /// transaction and one fsync). A batch that fails is carried out again caller by caller.
    func submitAdd(_ batch: AddBatch) async throws -> AddedBatch {
        try startIfNeeded()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AddedBatch, any Error>) in
            service.adds.append(.init(request: batch, continuation: continuation))
            guard !service.addTurnQueued else { return }
            service.addTurnQueued = true
            queueTurn(
                Turn(
                    run: {
                        let adds = self.takeAdds()
                        await BatchLine<Int, AddBatch, AddedBatch>.answer(
                            adds, perform: { batches in try await self.addTogether(batches) },
                            failure: .eachAlone(onSplit: { [logger = self.configuration.logger] count, error in
                                logger.debug(
                                    "a batch of adds failed; each caller's is added alone",
                                    metadata: ["callers": "\(count)", "error": "\(error)"])
                            }))
                    },
                    refuse: { error in
                        for add in self.takeAdds() { add.continuation.resume(throwing: error) }
                    }))
        }
    }
}
