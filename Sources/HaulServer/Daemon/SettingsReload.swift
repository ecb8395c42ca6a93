import HaulCore
import NIOConcurrencyHelpers

/// What `haul serve` changes while it runs when its configuration file is read again (SIGHUP):
/// the settings whose lines changed, with their new values, and the options that changed but
/// only a restart applies.
public struct SettingsReload: Sendable, Equatable {
    /// A setting the daemon changes in place, as the API and aria2's `changeGlobalOption` do.
    public enum Change: Sendable, Equatable {
        /// Downloads transferring at once (`jobs`).
        case maxConcurrentDownloads(Int)
        /// Connections for new downloads that do not name theirs (`connections`, `x`).
        case defaultConnections(Int)
        /// The global limit outside the schedule's rules (`limit-rate`); nil is none.
        case maxBytesPerSecond(Int64?)
        /// The global limit by time of week (`limit-schedule`); nil is none.
        case limitSchedule(SpeedSchedule?)
    }

    /// The file that was read.
    public var file: String
    /// The changed settings the daemon applies, in the order given.
    public var changes: [Change]
    /// Options whose lines changed but that only a restart applies (`port`, `store`, ...), as the
    /// file spells them.
    public var needsRestart: [String]

    /// A reload of `file` with these changes.
    public init(file: String, changes: [Change], needsRestart: [String]) {
        self.file = file
        self.changes = changes
        self.needsRestart = needsRestart
    }
}

/// The global limit's two sources, which a reload changes while the daemon runs: the schedule
/// (`--limit-schedule`) and the limit outside its rules (`--limit-rate`).
final class GlobalLimitPlan: Sendable {
    struct Plan: Sendable {
        var schedule: SpeedSchedule?
        var fallback: ByteRate?
    }

    private let box: NIOLockedValueBox<Plan>

    init(schedule: SpeedSchedule?, fallback: ByteRate?) {
        box = NIOLockedValueBox(Plan(schedule: schedule, fallback: fallback))
    }

    var current: Plan {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}
