/// The digest a server announces for the whole representation (`ServerDigest`): which responses
/// it is learned from, what a disagreement means, and what the finished file is checked against.
///
/// It is learned from every response whose bytes are written (the first source's, or a mirror's
/// once its probe proved it or it became the reference): a probe's response is compared, never
/// learned from. A `Repr-Digest` or `Digest` comes with every 206 too, so any such response can
/// teach it, and the strongest algorithm seen is kept. Two responses that give the same algorithm
/// different values describe two entities: that is a change of the entity, as a changed
/// validator is (a mirror that disagrees is dropped while other sources remain). Nothing is
/// learned for a `--range` download: its file is only part of the representation.
extension DownloadStateMachine {
    /// What the finished file is checked against: the request's checksum when it has one, else
    /// the server's digest (`DownloadRecord.expectedDigest`).
    public var digestToVerify: ExpectedDigest? { record.expectedDigest }

    /// How a response's digests contradict the one the download knows (a sentence), nil when
    /// they do not.
    func digestDisagreement(_ head: ResponseHead) -> String? {
        guard record.request.range == nil,
            case .conflict(let known, let announced) = ServerDigest.reconcile(
                known: record.serverDigest,
                announced: ServerDigest.announced(in: head))
        else { return nil }
        return
            "its \(announced.field.rawValue) gives \(announced.checksum.algorithm.rawValue) \(announced.checksum.hex), "
            + "where \(known.field.rawValue) gave \(known.checksum.hex)"
    }

    /// Learns what a written response announces: the first digest, or a stronger one.
    mutating func learnDigest(_ head: ResponseHead) {
        guard record.request.range == nil,
            case .take(let digest) = ServerDigest.reconcile(
                known: record.serverDigest, announced: ServerDigest.announced(in: head))
        else { return }
        record.serverDigest = digest
    }

    /// A written response's digest contradicts the download's: the source serves another file
    /// (dropped while other sources remain), or the entity changed and the download starts over.
    /// The report of `answered` was its last.
    mutating func digestChanged(_ reason: String, answered id: ConnectionID, source: Int, cause: RestartCause)
        -> [Action]
    {
        if sources.count > 1, sources.othersRemain(besides: source) {
            return sourceLied(id, reason: "serves another file (\(reason))")
        }
        return startOver(
            reason: "the file changed on the server (\(reason)); starting over", cause: cause, answered: id)
    }
}
