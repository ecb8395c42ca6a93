import ArgumentParser

/// How `haul get` reaches servers: proxies, credentials and the user agent.
struct NetworkOptions: ParsableArguments {
}
