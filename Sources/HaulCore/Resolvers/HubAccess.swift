/// Whether the Hub lets the user at a repository's files, decided without I/O: what a gated
/// repository (`gated` in the revision's answer, which the Hub gives without a token) asks before
/// any file is requested, and the Hub's refusals (`X-Error-Code`, as huggingface_hub's
/// `hf_raise_for_status` reads them) in one line each.
public enum HubAccess {
    /// What to do once the revision's answer is read.
    public enum Step: Sendable, Equatable {
        /// Ask for the files.
        case fetch
        /// A gated repository with a token: ask the Hub for one file (`HEAD /resolve/`) first,
        /// so a token that has not accepted the terms is one refusal, not one per file.
        case probe
        /// Refused before any file is asked.
        case refuse(HaulError)
    }

    /// The step after the revision's answer: a gated repository without a token is refused
    /// (the Hub would answer each file 401 `GatedRepo`), with one it is probed.
    public static func step(gated: Bool, hasToken: Bool, name: HubName) -> Step {
        guard gated else { return .fetch }
        return hasToken ? .probe : .refuse(gatedRefusal(name, status: 401))
    }

    /// `hf://ORG/REPO`, `hf://datasets/ORG/REPO`, `hf://spaces/ORG/REPO`.
    public static func shown(_ name: HubName) -> String {
        "hf://" + (name.kind == .model ? "" : name.kind.plural + "/") + name.repository
    }

    /// The one line for a gated repository the user may not read: what to do, no file's address.
    public static func gatedRefusal(_ name: HubName, status: Int) -> HaulError {
        HaulError(
            .httpStatus,
            "\(shown(name)) is gated: accept its terms on the Hub and set HF_TOKEN (or --hf-token-file)",
            httpStatus: status)
    }

    /// The Hub's refusal of the revision's API or of a file in words: its `X-Error-Code`, else
    /// the status. `shown` is the name as the user gave it.
    public static func refusal(
        status: Int, errorCode: String?, name: HubName, shown: String, hasToken: Bool
    ) -> HaulError {
        let what: String
        switch (status, errorCode ?? "") {
        case (401, "GatedRepo"), (403, "GatedRepo"): return gatedRefusal(name, status: status)
        case (404, "RevisionNotFound"): what = "no revision '\(name.revisionOrMain)' in \(name.repository)"
        case (404, "EntryNotFound"): what = "no such file"
        // The Hub answers 401 `RepoNotFound` without a token, for a private repository too.
        case (404, _), (401, "RepoNotFound"):
            what =
                "no such \(name.kind.rawValue) \(name.repository)"
                + (hasToken ? "" : " (or it is private: set HF_TOKEN)")
        case (401, _):
            what = "the Hub wants a token for \(name.repository) (HF_TOKEN or --hf-token-file)"
        case (403, _): what = "access to \(name.repository) is refused with this token"
        default: what = "the Hub answered HTTP \(status)\(ResponseCheck.reason(status))"
        }
        return HaulError(.httpStatus, "\(shown): \(what)", httpStatus: status)
    }
}
