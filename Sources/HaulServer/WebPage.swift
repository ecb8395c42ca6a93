enum WebPage {
    static let html = "<!doctype html><title>haul</title>"
}
