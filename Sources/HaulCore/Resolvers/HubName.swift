/// A name on the Hugging Face Hub, as `huggingface_hub`'s file system spells one:
/// `hf://ORG/REPO[@REVISION][/PATH]` for a model, `hf://datasets/...` and `hf://spaces/...` for
/// the others. A revision with a `/` in it (`refs/pr/1`) is written with `%2F`.
public struct HubName: Sendable, Equatable {
    /// What kind of repository.
    public enum Kind: String, Sendable, Equatable {
        /// A model: `hf://ORG/REPO`.
        case model
        /// A dataset: `hf://datasets/ORG/REPO`.
        case dataset
        /// A space: `hf://spaces/ORG/REPO`.
        case space

        /// The plural the Hub's API and URLs use: `models`, `datasets`, `spaces`.
        public var plural: String { rawValue + "s" }
    }

    /// The repository's kind.
    public var kind: Kind
    /// `ORG/REPO`.
    public var repository: String
    /// The branch, tag or commit, when the name gives one (else the repository's `main`).
    public var revision: String?
    /// A file or folder in the repository, when the name gives one (no leading `/`).
    public var path: String?

    /// The revision asked for: the name's, else `main`.
    public var revisionOrMain: String { revision ?? "main" }

    /// Parses the part after `hf://`. Throws a `.badURL` error naming what is wrong.
    public init(parsing name: String) throws(HaulError) {
        func bad(_ why: String) -> HaulError { HaulError(.badURL, "bad Hugging Face name 'hf://\(name)': \(why)") }
        var parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        kind = .model
        if let first = parts.first, let named = [Kind.dataset, .space].first(where: { $0.plural == first }) {
            kind = named
            parts.removeFirst()
        }
        guard parts.count >= 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw bad("expected ORG/REPO, as in hf://openai-community/gpt2")
        }
        var repo = parts[1]
        if let at = repo.firstIndex(of: "@") {
            let revision = String(
                decoding: PercentDecoding.decode(repo[repo.index(after: at)...]), as: UTF8.self)
            guard !revision.isEmpty, !revision.contains(".."), !revision.hasPrefix("/"), !revision.hasSuffix("/")
            else { throw bad("an empty or malformed revision after '@'") }
            self.revision = revision
            repo = String(repo[..<at])
        }
        for part in [parts[0], repo] where !Self.isRepositoryPart(part) {
            throw bad("'\(part)' is not a name: letters, digits, '-', '_' and '.', at most 96")
        }
        repository = parts[0] + "/" + repo
        let rest = parts.dropFirst(2)
        guard !rest.contains(where: { $0 == ".." || $0 == "." }) else { throw bad("a path with '.' or '..'") }
        let path = rest.filter { !$0.isEmpty }.joined(separator: "/")
        self.path = path.isEmpty ? nil : path
    }

    /// The Hub's rule for an organisation's or a repository's name.
    static func isRepositoryPart(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 96, !text.hasPrefix("."), !text.hasPrefix("-"), !text.contains("..")
        else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || byte == 45 || byte == 95 || byte == 46
        }
    }
}
