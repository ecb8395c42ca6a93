import ArgumentParser

/// `--config FILE` and `--no-config` of `haul get` and `haul serve`. They are read before the
/// command line is parsed (`ConfigArguments`); declared here so that the parser takes them and
/// `--help` shows them.
struct ConfigOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            """
            Read options from FILE instead of $XDG_CONFIG_HOME/haul/config (~/.config/haul/config): \
            lines name=value with the long option names, # comments, sections [get] and [serve].
            """, valueName: "FILE"))
    var file: String?

    @Flag(name: .customLong("no-config"), help: "Read no configuration file.")
    var skips = false
}
