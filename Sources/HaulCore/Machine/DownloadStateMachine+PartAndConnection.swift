/// The two things the machine tracks below the download: parts of the file (what each has
/// accepted and made durable) and connections (their phase, and what their answer carries).
extension DownloadStateMachine {
    struct Part: Hashable, Sendable {
        var start: Int64
        /// Last byte, inclusive; nil while the entity's length is unknown.
        var end: Int64?
        /// Bytes accepted for writing: the next write goes to `start + appended`.
        var appended: Int64
        /// Bytes fsynced: what a checkpoint may store.
        var durable: Int64
        var owner: ConnectionID?

        var next: Int64 { start + appended }
        var remaining: Int64? { end.map { $0 - next + 1 } }
        var isComplete: Bool { remaining.map { $0 <= 0 } ?? false }
    }

    struct Connection: Hashable, Sendable {
        enum Phase: Hashable, Sendable {
            case requesting(RequestPlan)
            case receiving
            case waiting
            /// Told to close; the next report from it is its last.
            case closing
        }

        var phase: Phase
        /// Start offset of the part it works on.
        var part: Int64
        /// The last byte the current request asked for, then the last its response carries;
        /// nil: to the end of the entity. A body that reaches it ends by itself and leaves its
        /// connection open for the next piece.
        var requestedEnd: Int64?
        var skip: Int64 = 0
        var compare: Int64 = 0
        var compareOffset: Int64 = 0
        /// Bytes written by this connection's current attempt.
        var received: Int64 = 0
        /// Failed attempts since the last one that made progress (see `DownloadStateMachine+Retry`).
        var failures = 0
        var pace = Pace()
        /// Bytes/s over the last ticks; nil until measured.
        var speed: Double?
        var bytesAtLastTick: Int64 = 0
        /// Not the download's first connection: a refusal is the server's limit, not an error.
        var isExtra: Bool
        /// The index in `sources` of the URL this connection asks.
        var source = 0
        /// Its request is a probe: the bytes are compared with the disk, none written
        /// (`+Sources`).
        var probing = false
        /// The download's `progressInRun` when this connection last failed, or opened.
        var progressAtFailure: Int64 = 0

        var isWorking: Bool {
            switch phase {
            case .requesting, .receiving: true
            case .waiting, .closing: false
            }
        }
    }
}
