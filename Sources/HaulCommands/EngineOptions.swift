import ArgumentParser
import Haul
import HaulCore

/// What `haul get` and `haul serve` say differently about the engine options they share: their
/// help, and `-n` (wget's spelling) for `get`.
protocol EngineOptionsRole {
    static var jobsHelp: ArgumentHelp { get }
    static var connectionsNames: NameSpecification { get }
    static var connectionsHelp: ArgumentHelp { get }
    static var connectionsPerHostHelp: ArgumentHelp { get }
    static var limitRateHelp: ArgumentHelp { get }
    static var refreshCommandHelp: ArgumentHelp { get }
}

/// The engine options `haul get` and `haul serve` share, declared and checked once, as given
/// (nil: not given). Each command supplies its own defaults: `-j` 3 for both, `-x` absent (start
/// at 4 and grow) for `get` and 1 for `serve`, a checkpoint a second.
struct EngineOptions<Role: EngineOptionsRole>: ParsableArguments {
    @Option(name: [.customShort("j"), .customLong("jobs")], help: Role.jobsHelp)
    var jobs: Int?

    @Option(name: Role.connectionsNames, help: Role.connectionsHelp)
    var connections: Int?

    @Option(name: .customLong("max-connections-per-host"), help: Role.connectionsPerHostHelp)
    var maxConnectionsPerHost: Int?

    @Option(name: .customLong("limit-rate"), help: Role.limitRateHelp)
    var limitRate: String?

    @Option(name: .customLong("refresh-command"), help: Role.refreshCommandHelp)
    var refreshCommand: String?

    @Option(
        name: .customLong("content-store"),
        help: ArgumentHelp(
            """
            Keep every file whose SHA-256 or SHA-512 is known (hf://, oci://, s3://, --checksum, a Metalink) in DIR \
            by digest, read-only, and take a file from there instead of fetching it: a reflink, else a hard link \
            (the file then shares the store's read-only mode), else a copy, each checked against its digest first.
            """,
            valueName: "DIR"))
    var contentStore: String?

    @Option(help: .hidden)
    var checkpointInterval: Double?

    /// This boot's identity instead of the system's: a test plays a reboot with a new one
    /// (progress noted without fsync is trusted only on the boot that noted it).
    @Option(help: .hidden)
    var bootId: String?

    func validate() throws {
        try Limits.validate(jobs, in: Limits.concurrentDownloads, option: "-j")
        try Limits.validate(connections, in: Limits.connections, option: "-x")
        try Limits.validate(maxConnectionsPerHost, in: Limits.connectionsPerHost, option: "--max-connections-per-host")
        if let limitRate { _ = try GetCommand.rate(limitRate) }
        if let refreshCommand, refreshCommand.allSatisfy(\.isWhitespace) {
            throw ValidationError("--refresh-command needs a command")
        }
        if let contentStore, contentStore.allSatisfy(\.isWhitespace) {
            throw ValidationError("--content-store needs a directory")
        }
        if let checkpointInterval, checkpointInterval <= 0 {
            throw ValidationError("--checkpoint-interval must be positive")
        }
    }

    /// `--limit-rate` in bytes per second; nil: no limit.
    func maxBytesPerSecond() throws -> Int64? {
        try limitRate.map { try GetCommand.rate($0) }
    }

    /// `--content-store`, absolute; nil when not given.
    var store: ContentStore? {
        contentStore.map { ContentStore(root: HaulHome.absolute($0)) }
    }

    /// `--checkpoint-interval`, default one second.
    var checkpoint: Duration {
        .milliseconds(Int64((checkpointInterval ?? 1) * 1000))
    }
}
