import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What `haul serve` runs or calls when a download ends: `--on-complete CMD`, `--on-error CMD`
/// and `--webhook URL`. Set only on the command line: no API, aria2 option or request can
/// change them (aria2's `on-download-complete` set over an exposed RPC is a known way to run
/// code on the host).
public struct DaemonHooks: Sendable {
    /// Run as `CMD ID 1 PATH` when a download completes (aria2's `on-download-complete`).
    public var onComplete: CommandHook?
    /// Run as `CMD ID 1 PATH` when a download fails (aria2's `on-download-error`).
    public var onError: CommandHook?
    /// Sent a signed JSON event when a download completes or fails.
    public var webhook: Webhook.Target?
    /// Events waiting for each hook; one more drops the oldest, with a log line, so a slow
    /// command or receiver never holds up the daemon.
    public var queueLimit = 256

    public init(onComplete: CommandHook? = nil, onError: CommandHook? = nil, webhook: Webhook.Target? = nil) {
        self.onComplete = onComplete
        self.onError = onError
        self.webhook = webhook
    }

    public var isEmpty: Bool { onComplete == nil && onError == nil && webhook == nil }
}
