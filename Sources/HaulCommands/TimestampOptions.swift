import ArgumentParser
import HaulCore

/// `haul get -N` (wget's `--timestamping`) and `--remote-time` (curl's `-R`). The rules live in
/// the download's state machine (`If-Modified-Since` on a fresh start, a 304 ends the run, a
/// newer file replaces the old one once verified, the time from `Last-Modified`); this only
/// takes the flags.
struct TimestampOptions: ParsableArguments {
    @Flag(
        name: [.customShort("N"), .customLong("timestamping")],
        help: ArgumentHelp(
            """
            When the file is already here, download it only if the server's is newer (If-Modified-Since); a newer \
            one replaces it once complete and verified. Implies --remote-time.
            """
        ))
    var timestamping = false

    @Flag(name: .customLong("remote-time"), help: "Give the saved file the server's Last-Modified time.")
    var remoteTime = false

    private enum CodingKeys: String, CodingKey {
        case timestamping, remoteTime
    }
}
