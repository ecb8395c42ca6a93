/// Where a download manager's loop stands, and what each call on it does: run the loop, let an
/// operation in, refuse it, or stop. A value type the manager asks and obeys; it decides nothing
/// about downloads (that is `DownloadQueue`'s).
public struct ManagerLifecycle: Sendable, Hashable {
    /// Who runs the manager's loop, if anyone.
    public enum Loop: Sendable, Hashable {
        /// Nothing runs the manager yet: an operation is refused.
        case idle
        /// `run()` is on its way (`prepare`): operations wait in the inbox for it.
        case prepared
        /// `run()` reads the inbox.
        case running
        /// The loop has ended: nothing more runs.
        case ended
    }

    /// What a call of `shutdown` does.
    public enum Shutdown: Sendable, Hashable {
        /// Stop here, now: nothing runs the loop, and nothing will.
        case stopHere
        /// Stop in the loop, as one of its children (its runs' ends come through the loop).
        case stopInLoop
        /// Asked already: wait for that one to end.
        case wait
    }

    /// Where the loop stands.
    public private(set) var loop = Loop.idle
    /// Whether a shutdown was asked (or the loop ended without one).
    public private(set) var shutdownAsked = false
    /// Whether the shutdown's work has begun: it is done once.
    public private(set) var stopping = false

    /// A manager nothing runs yet.
    public init() {}

    /// `run()` is called: true when it runs the loop (once), false when another call does or did.
    public mutating func runCalled() -> Bool {
        guard loop == .idle || loop == .prepared else { return false }
        loop = .running
        return true
    }

    /// `run()` is on its way: from now on operations wait for it. A manager that runs or ran
    /// cannot be prepared again.
    public mutating func prepare() throws(HaulError) {
        guard loop == .idle || loop == .prepared else {
            throw HaulError(.usage, "this download manager runs already, or has run")
        }
        loop = .prepared
    }

    /// Whether an operation may wait for the loop: refused when nothing runs it (it would wait
    /// for ever) or once it has ended.
    public func checkOperation() throws(HaulError) {
        switch loop {
        case .idle:
            throw HaulError(
                .usage,
                "the download manager is not running: use it inside DownloadManager.withManager(configuration:) "
                    + "{ manager in ... }, or run it in a ServiceGroup")
        case .prepared, .running: return
        case .ended: throw Self.shutDown
        }
    }

    /// The error of an operation that comes once the manager has shut down.
    public static var shutDown: HaulError { HaulError(.interrupted, "the download manager has shut down") }

    /// A shutdown is asked.
    public mutating func shutdown() -> Shutdown {
        guard !shutdownAsked else { return .wait }
        shutdownAsked = true
        switch loop {
        case .idle, .ended:
            loop = .ended
            return .stopHere
        case .prepared, .running:
            return .stopInLoop
        }
    }

    /// The loop has ended (shut down, or its task group cancelled): nothing runs any more.
    public mutating func loopEnded() {
        loop = .ended
        shutdownAsked = true
    }

    /// The shutdown's work begins: true the first time only.
    public mutating func beginStopping() -> Bool {
        defer { stopping = true }
        return !stopping
    }

    /// Whether the shutdown waits for the runs: not once the loop has ended (every run was its
    /// child, and has ended with it).
    public var waitsForRuns: Bool { loop != .ended }
}
