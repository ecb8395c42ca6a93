/// Where the AWS command line and SDKs find keys and a region, read the same way: the
/// environment first (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`;
/// `AWS_REGION`, then `AWS_DEFAULT_REGION`), then the profile `AWS_PROFILE` names (else
/// `default`) in the shared credentials file and then in the config file (`[profile NAME]` there,
/// `[default]` for the default one). Pure: the caller reads the files.
public struct AWSProfiles: Sendable, Equatable {
    /// The keys found, or nil: requests go unsigned (a public bucket).
    public var credentials: SigV4.Credentials?
    /// The region found, or nil (the caller's default is `us-east-1`).
    public var region: String?
    /// The profile read.
    public var profile: String

    /// What `environment` and the two files' texts (nil: no such file) give.
    ///
    /// - Throws: `.usage` when only one of the access key and its secret is given, in the
    ///   environment or in the profile, or when `AWS_PROFILE` names a profile neither file has.
    public init(environment: [String: String], credentialsFile: String?, configFile: String?) throws(HaulError) {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let named = nonEmpty("AWS_PROFILE")
        profile = named ?? "default"
        let shared = credentialsFile.map(Self.sections) ?? [:]
        let config = configFile.map(Self.sections) ?? [:]
        let fromCredentials = shared[profile]
        let fromConfig = config[profile == "default" ? "default" : "profile \(profile)"]
        if named != nil, fromCredentials == nil, fromConfig == nil {
            throw HaulError(
                .usage,
                "AWS_PROFILE names the profile '\(profile)', which neither ~/.aws/credentials nor ~/.aws/config has")
        }
        if let key = nonEmpty("AWS_ACCESS_KEY_ID"), let secret = nonEmpty("AWS_SECRET_ACCESS_KEY") {
            credentials = SigV4.Credentials(
                accessKeyID: key, secretAccessKey: secret, sessionToken: nonEmpty("AWS_SESSION_TOKEN"))
        } else if nonEmpty("AWS_ACCESS_KEY_ID") != nil || nonEmpty("AWS_SECRET_ACCESS_KEY") != nil {
            throw HaulError(.usage, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; only one is set")
        } else {
            if let shared = try Self.credentials(in: fromCredentials, profile: profile) {
                credentials = shared
            } else {
                credentials = try Self.credentials(in: fromConfig, profile: profile)
            }
        }
        region =
            nonEmpty("AWS_REGION") ?? nonEmpty("AWS_DEFAULT_REGION") ?? fromConfig?["region"]
            ?? fromCredentials?["region"]
    }

    /// The keys of one section, nil when it has neither.
    static func credentials(in section: [String: String]?, profile: String) throws(HaulError) -> SigV4.Credentials? {
        guard let section else { return nil }
        let key = section["aws_access_key_id"]
        let secret = section["aws_secret_access_key"]
        guard let key, let secret else {
            if key != nil || secret != nil {
                throw HaulError(
                    .usage, "the AWS profile '\(profile)' has only one of aws_access_key_id and aws_secret_access_key")
            }
            return nil
        }
        return SigV4.Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: section["aws_session_token"])
    }

    /// An INI file's sections: each `[name]`'s `key = value` lines, names and keys as written
    /// (keys lowercased), `#` and `;` lines skipped.
    static func sections(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = String(rawLine.trimmed())
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = String(line.dropFirst().dropLast().trimmed())
                current = name
                sections[name, default: [:]] = sections[name] ?? [:]
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmed().lowercased()
            let value = String(line[line.index(after: equals)...].trimmed())
            if !value.isEmpty { sections[current]?[key] = value }
        }
        return sections
    }
}
