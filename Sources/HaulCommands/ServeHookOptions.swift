import ArgumentParser
import HaulCore
import HaulServer

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

/// `haul serve`'s hooks and speed schedule: command line only (haul serve has no configuration
/// file), never settable through the API or aria2's RPC.
struct ServeHookOptions: ParsableArguments {
    @Option(
        name: .customLong("on-complete"),
        help: ArgumentHelp(
            """
            Run PROGRAM ID 1 PATH when a download completes, as aria2's on-download-complete does (no shell; ID \
            is also the aria2 GID).
            """,
            valueName: "PROGRAM"))
    var onComplete: String?

    @Option(
        name: .customLong("on-error"),
        help: ArgumentHelp(
            "Run PROGRAM ID 1 PATH when a download fails, as aria2's on-download-error does.", valueName: "PROGRAM"))
    var onError: String?

    @Option(
        help: ArgumentHelp(
            """
            POST a JSON event to URL when a download completes or fails, signed with X-Haul-Signature: \
            sha256=HMAC (needs a secret); retried with backoff on errors and 5xx.
            """,
            valueName: "URL"))
    var webhook: String?

    @Option(help: ArgumentHelp("The key that signs --webhook's events (HMAC-SHA256 of the body).", valueName: "SECRET"))
    var webhookSecret: String?

    @Option(help: ArgumentHelp("Read --webhook's key from FILE (keeps it out of the process list).", valueName: "FILE"))
    var webhookSecretFile: String?

    @Option(
        help: ArgumentHelp(
            """
            Change the global limit by time of week, in local time: rules 'DAYS HH:MM-HH:MM RATE' separated by \
            ';', the first that matches wins, --limit-rate outside them. Example: 'Mon-Fri 09:00-18:00 1M; \
            Sat,Sun 00:00-24:00 0' (0: no limit).
            """,
            valueName: "RULES"))
    var limitSchedule: String?

    func validate() throws {
        do throws(HaulError) {
            _ = try hooks()
            _ = try schedule()
        } catch {
            throw ValidationError(error.message)
        }
    }

    func hooks() throws(HaulError) -> DaemonHooks {
        var hooks = DaemonHooks()
        hooks.onComplete = try onComplete.map { command throws(HaulError) in
            try CommandHook(command, option: "--on-complete")
        }
        hooks.onError = try onError.map { command throws(HaulError) in try CommandHook(command, option: "--on-error") }
        if webhookSecret != nil, webhookSecretFile != nil {
            throw HaulError(.usage, "--webhook-secret and --webhook-secret-file go alone: give one")
        }
        if let webhook {
            let secret =
                try webhookSecretFile.map { path throws(HaulError) in try Webhook.Target.secret(file: path) }
                ?? webhookSecret ?? ""
            hooks.webhook = try Webhook.Target(url: webhook, secret: secret)
        } else if webhookSecret != nil || webhookSecretFile != nil {
            throw HaulError(.usage, "--webhook-secret and --webhook-secret-file need --webhook")
        }
        return hooks
    }

    func schedule() throws(HaulError) -> SpeedSchedule? {
        try limitSchedule.map { text throws(HaulError) in try SpeedSchedule(parsing: text) }
    }
}
