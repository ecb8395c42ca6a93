extension DownloadStateMachine {
    /// The user changed the download's request fields while it runs (aria2's `changeOption` with
    /// `referer` or `user-agent`): each request from now on carries them, and the next write
    /// stores them.
    public mutating func setHeaders(_ headers: HTTPHeaderList) -> [Action] {
        record.request.headers = headers
        return [.persist]
    }
}
