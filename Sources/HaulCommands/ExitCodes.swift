import HaulAPI
import HaulCore

/// The documented exit statuses of `haul`. Scripts depend on them: never renumber.
public enum ExitCodes {
    public static let success: Int32 = 0
    /// Something Haul did not expect.
    public static let `internal`: Int32 = 1
    /// Bad arguments, a malformed URL or an unsupported scheme.
    public static let usage: Int32 = 2
    /// The server answered with an error (404, 403, a 5xx that outlasted the retries), or broke
    /// the protocol (a wrong Content-Range, broken chunked encoding, a body shorter than its
    /// Content-Length, too many redirects).
    public static let http: Int32 = 3
    /// The network failed and the retries ran out (refused, reset, timed out).
    public static let network: Int32 = 4
    /// The file's length or checksum is wrong, or its digest is not the one the server announced.
    public static let verification: Int32 = 5
    /// Disk full, permission denied, destination exists or in use by another haul, unreadable state database.
    public static let fileSystem: Int32 = 6
    /// No daemon answers at the known address, or it refused the token.
    public static let noDaemon: Int32 = 7
    /// The daemon has no download with that id.
    public static let notFound: Int32 = 8
    /// The download's state does not allow the request (pausing a finished one).
    public static let conflict: Int32 = 9
    /// A refused path: a directory outside the ones the daemon writes to, or a symbolic link (or
    /// a `.part` with other hard links) where haul would write.
    public static let forbidden: Int32 = 10
    /// The fleet's database (`--store postgres://...`) cannot be reached.
    public static let storeUnavailable: Int32 = 11
    /// The fleet's database refused the login.
    public static let storeLogin: Int32 = 12
    /// The fleet's database has a schema newer than this haul.
    public static let storeTooNew: Int32 = 13
    /// The URL stopped serving the file midway (401, 403 or 410 after bytes arrived: a signed
    /// link that expired); the bytes are kept: give it a new URL (the same command with the new
    /// URL and the same -o, or 'haul urls ID URL').
    public static let urlExpired: Int32 = 14
    /// A cookie file (`--load-cookies`) that cannot be read or is malformed; or one
    /// (`--save-cookies`) that cannot be written.
    public static let cookieFile: Int32 = 15
    /// Another live `haul serve` already uses this `--fleet-name` in the fleet's database.
    public static let fleetNameInUse: Int32 = 16
    /// Stopped by Ctrl-C or SIGTERM after checkpointing; run the same command again to resume.
    public static let interrupted: Int32 = 130

    /// Every engine code has its status: a new code does not compile until it is given one.
    public static func code(for error: HaulError) -> Int32 {
        switch error.code {
        case .usage, .badURL, .unsupportedScheme, .badRequest, .tooLarge: usage
        case .notFound: notFound
        case .conflict: conflict
        case .forbidden: forbidden
        case .httpStatus, .badResponse, .brokenFraming, .tooManyRedirects: http
        case .network: network
        case .lengthMismatch, .checksumMismatch, .digestMismatch: verification
        case .fileSystem, .diskFull, .fileExists, .store, .inUse: fileSystem
        case .interrupted, .cancelled: interrupted
        case .storeUnavailable: storeUnavailable
        case .storeLogin: storeLogin
        case .storeTooNew: storeTooNew
        case .fleetNameInUse: fleetNameInUse
        case .urlExpired: urlExpired
        case .badCookieFile: cookieFile
        case .leaseLost, .internal: `internal`
        }
    }

    /// The daemon's own errors: no daemon answers, or it refused the token or the name used.
    public static func code(for error: DaemonError) -> Int32 {
        switch error.code {
        case .noDaemon, .unauthorized, .misdirected: noDaemon
        }
    }
}
