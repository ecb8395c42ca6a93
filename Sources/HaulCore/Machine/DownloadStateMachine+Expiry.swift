/// A signed URL that expires midway (401, 403 or 410 after bytes arrived, or a redirect to a
/// web page where the file was): the bytes are kept and the download needs a new URL. With a
/// refresh command (`--refresh-command`, never set over an API) the runner asks it for one and
/// the download goes on in the same run; otherwise it fails with `url-expired`, shown as "needs
/// a new URL", until one is given (`DownloadManager.setSources`).
extension DownloadStateMachine {
    /// Refreshes without progress in between before the download gives up and fails.
    public static let maxURLRefreshes = 3

    /// The download's URL expired: ask for a fresh one, or fail keeping the bytes.
    mutating func urlExpired(_ error: HaulError) -> [Action] {
        let progressed = completedLength > completedAtLastRefresh
        if progressed { urlRefreshes = 0 }
        guard settings.refreshesURL, urlRefreshes < Self.maxURLRefreshes, stopRequest == nil else { return fail(error) }
        urlRefreshes += 1
        completedAtLastRefresh = completedLength
        state = .refreshingURL(expired: error)
        return closeEverything() + [.notify(.urlExpiring(error)), .refreshURL(expired: record.request.url)]
    }

    /// The result of `.refreshURL`: a new URL for the same download (its bytes are kept if it
    /// serves the same file: no validator is carried over, so the resume re-reads an overlap),
    /// or why none came.
    public mutating func urlRefreshed(_ result: Result<RemoteURL, HaulError>) -> [Action] {
        // A stop or a start-over since then has its own way on: the answer is too late.
        guard case .refreshingURL(let expired) = state else { return [] }
        state = .downloading
        switch result {
        case .failure(let error):
            return fail(
                HaulError(
                    expired.code, expired.message + "; the refresh command gave no new URL: \(error.message)",
                    httpStatus: expired.httpStatus))
        case .success(let url):
            do {
                try record.request.replaceSources(url: url, mirrors: record.request.mirrors)
            } catch {
                return fail(
                    HaulError(
                        expired.code, expired.message + "; the refresh command's URL cannot be used: \(error.message)",
                        httpStatus: expired.httpStatus))
            }
            record.validator = nil
            record.finalURL = nil
            storedEntity = nil
            sources = Self.sources(of: record.request, settings: settings)
            rangesProven = false
            return [.persist, .notify(.urlRefreshed(url))] + openFirstConnection()
        }
    }

    /// A redirect, once bytes have arrived, to a web page where the file was: a login page that
    /// a signed URL's expiry sends one to. Nil for any other answer.
    func loginRedirect(_ head: ResponseHead, plan: RequestPlan) -> HaulError? {
        guard completedLength > 0, head.status == 200, head.url != plan.url.absoluteString,
            let type = head.headers["Content-Type"]?.lowercased(),
            type.hasPrefix("text/html") || type.hasPrefix("application/xhtml")
        else { return nil }
        return HaulError(
            .urlExpired,
            "\(plan.url): redirected to a web page (\(head.url)) instead of the file after "
                + "\(completedLength) bytes had arrived: the URL has probably expired; the bytes are kept, and a new URL "
                + "for the same file continues the download", httpStatus: head.status)
    }
}
