import AsyncHTTPClient
import Crypto
import Haul
import HaulAPI
import HaulCore
import Logging
import NIOCore
import NIOHTTP1

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `haul serve --webhook URL`: a JSON event POSTed when a download completes or fails, signed so
/// the receiver can tell it came from this daemon.
///
/// The body is the event as the event stream writes it (`EventView`: `type`, `id`, `status`,
/// `path`, `error`, plus `url` and `totalLength`). `X-Haul-Signature: sha256=HEX` is the
/// HMAC-SHA256 of the body's exact bytes under the webhook secret, as GitHub signs its
/// webhooks; `X-Haul-Event` names the type and `X-Haul-Delivery` is one id per event, the same
/// on every try, for a receiver that must not act twice.
///
/// A connection failure, a 429 or a 5xx is tried again after 1, 2, 4, ... seconds (at most a
/// minute), up to `tries` times; any other answer ends the delivery (a 2xx delivered, a 4xx
/// logged as refused).
public struct Webhook: Sendable {
    public struct Target: Sendable {
        public var url: String
        public var secret: String
        public var tries = 5
        public var firstDelay: Duration = .seconds(1)
        public var longestDelay: Duration = .seconds(60)
        /// For one try: connecting, sending and reading the answer.
        public var timeout: Duration = .seconds(10)

        /// `url` must be http or https with a host; `secret` must not be empty.
        public init(url: String, secret: String) throws(HaulError) {
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
                ["http", "https"].contains(scheme),
                let host = parsed.host, !host.isEmpty
            else {
                throw HaulError(.usage, "--webhook: '\(url)' is not an http:// or https:// URL")
            }
            guard !secret.isEmpty else {
                throw HaulError(
                    .usage, "--webhook needs a secret to sign its events: --webhook-secret or --webhook-secret-file")
            }
            self.url = url
            self.secret = secret
        }

        /// The secret in `path`: its content without the surrounding white space.
        public static func secret(file path: String) throws(HaulError) -> String {
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw HaulError(
                    .usage, "--webhook-secret-file: cannot read \(path): \(error)")
            }
            let secret = String(text.trimmed())
            guard !secret.isEmpty else { throw HaulError(.usage, "--webhook-secret-file: \(path) is empty") }
            return secret
        }
    }

    /// What one answer means for the delivery.
    enum Verdict: Equatable {
        case delivered
        case retry
        case refused
    }

    static let signatureHeader = "X-Haul-Signature"

    let target: Target
    let client: HTTPClient
    let clock: any HaulClock
    let logger: Logger

    /// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`.
    public static func signature(of body: some DataProtocol, secret: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8)))
        return "sha256="
            + code.map { byte in
                let hex = String(byte, radix: 16)
                return hex.count == 1 ? "0" + hex : hex
            }.joined()
    }

    static func verdict(status: Int) -> Verdict {
        switch status {
        case 200..<300: .delivered
        case 429, 500..<600: .retry
        default: .refused
        }
    }

    /// The wait before try `attempt + 1` after `attempt` failed ones: doubling, capped.
    func delay(after attempt: Int) -> Duration {
        var delay = target.firstDelay
        for _ in 1..<max(attempt, 1) where delay < target.longestDelay { delay *= 2 }
        return min(delay, target.longestDelay)
    }

    /// The event's body, nil for outcomes that send none (only completions and failures do).
    static func body(for outcome: DownloadOutcome) throws -> Data? {
        guard outcome.status == .completed || outcome.status == .failed else { return nil }
        var view = EventView(outcome.finalEvent)
        view.url = outcome.record?.request.url.absoluteString
        view.totalLength = outcome.record?.totalLength
        return try APIResponse.encoder.encode(view)
    }

    /// Tries until delivered, refused or out of tries; returns whether it was delivered. Never
    /// throws: every failure is logged.
    @discardableResult
    func deliver(_ body: Data, type: String, id: DownloadID) async -> Bool {
        let delivery = UUID().uuidString.lowercased()
        let metadata: Logger.Metadata = ["id": "\(id)", "webhook": "\(target.url)", "delivery": "\(delivery)"]
        var request = HTTPClientRequest(url: target.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: HaulVersion.userAgent)
        request.headers.add(name: "X-Haul-Event", value: type)
        request.headers.add(name: "X-Haul-Delivery", value: delivery)
        request.headers.add(name: Self.signatureHeader, value: Self.signature(of: body, secret: target.secret))
        for attempt in 1...max(target.tries, 1) {
            request.body = .bytes(ByteBuffer(bytes: body))
            let problem: String
            do {
                let response = try await client.execute(request, timeout: TimeAmount(target.timeout))
                // Read (and drop) the answer, so the connection can be reused.
                _ = try await response.body.collect(upTo: 1 << 20)
                let status = Int(response.status.code)
                switch Self.verdict(status: status) {
                case .delivered:
                    logger.debug("webhook delivered", metadata: metadata)
                    return true
                case .refused:
                    logger.warning(
                        "the webhook refused the event with status \(status); not sent again", metadata: metadata)
                    return false
                case .retry:
                    problem = "status \(status)"
                }
            } catch {
                problem = "\(error)"
            }
            if Task.isCancelled { return false }
            guard attempt < target.tries else {
                logger.error("webhook not delivered after \(attempt) tries: \(problem)", metadata: metadata)
                return false
            }
            let wait = delay(after: attempt)
            logger.warning("webhook try \(attempt) failed (\(problem)); again in \(wait)", metadata: metadata)
            do {
                try await clock.sleep(for: wait)
            } catch {
                return false // cancelled: the daemon is stopping
            }
        }
        return false
    }
}
