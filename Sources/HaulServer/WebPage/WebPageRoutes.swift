import Hummingbird
import NIOCore

/// `GET /`, `/haul.css`, `/haul.js`, `/haul-limits.js`: the web page in four files, so its Content-Security-Policy
/// can forbid inline script and style (an injected `<script>` or `onerror=` in a file name
/// would not run even if an escaping bug let it into the DOM), refuse to be framed
/// (clickjacking of the pause and remove buttons) and let the page talk only to this daemon.
enum WebPageRoutes {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    static func register<Context: RequestContext>(on router: Router<Context>) {
        router.get("/") { _, _ in response(WebPage.html, type: "text/html; charset=utf-8") }
        router.get("haul.css") { _, _ in response(WebPage.css, type: "text/css; charset=utf-8") }
        router.get("haul.js") { _, _ in response(WebPage.script, type: "text/javascript; charset=utf-8") }
        router.get("haul-limits.js") { _, _ in response(WebPageLimits.script, type: "text/javascript; charset=utf-8") }
    }

    static func response(_ text: String, type: String) -> Response {
        var headers: HTTPFields = [
            .contentType: type, .cacheControl: "no-store", .contentSecurityPolicy: contentSecurityPolicy,
        ]
        headers[HTTPFields.Element.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPFields.Element.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPFields.Element.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
