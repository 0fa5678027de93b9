package server

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// The origin policy keeps web pages away from the server (spec I5). The
// Host check stops DNS rebinding, but a page on any origin the user visits
// can still send "simple" requests to 127.0.0.1 — a no-cors fetch, a form
// POST, a beacon — whose side effects happen although the page never
// reads the answer. So before any work:
//
//   - a request whose Origin is neither the server's own nor a
//     -cors-origin one is refused (403 forbidden_origin); so is one
//     without Origin whose Sec-Fetch-Site says another site or origin
//     sent it;
//   - a body sent to an endpoint must be application/json (415
//     unsupported_media_type otherwise), which no form, beacon or no-cors
//     fetch can send without a preflight;
//   - preflights, Private Network Access's included, are answered only
//     for -cors-origin origins.
//
// Requests that carry neither header (curl, the SDKs, other programs) and
// the chat page's own requests pass.

// Codes of the origin policy.
const (
	// CodeForbiddenOrigin refuses a request a foreign web page sent.
	CodeForbiddenOrigin = "forbidden_origin"
	// CodeUnsupportedMediaType refuses a body that is not JSON.
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// checkOrigin applies the policy to r. It answers the request itself and
// returns false when r must go no further: a refusal, or a preflight of an
// allowed origin.
func (s *Server) checkOrigin(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && slices.Contains(s.cfg.CORSOrigins, origin)
	switch {
	case allowed:
		corsHeaders(w.Header(), origin, r)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	case origin != "" && !sameOrigin(origin, r):
		s.refuseOrigin(w, r, fmt.Sprintf("origin %q may not call this server: only its own pages and -cors-origin origins may", clip(origin)))
		return false
	case origin == "" && crossSite(r.Header.Get("Sec-Fetch-Site")):
		s.refuseOrigin(w, r, "a request another web page sent (Sec-Fetch-Site: "+clip(r.Header.Get("Sec-Fetch-Site"))+") may not call this server")
		return false
	}
	if hasBody(r.Method) && !jsonBody(r) {
		s.writeError(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedMediaType,
			message: fmt.Sprintf("the request body must be JSON (Content-Type: application/json), not %q", clip(r.Header.Get("Content-Type")))})
		return false
	}
	return true
}

func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request, message string) {
	s.log.Warn("request from a web page refused", "origin", clip(r.Header.Get("Origin")),
		"sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "method", r.Method, "path", clip(r.URL.Path))
	s.writeError(w, r, &apiError{status: http.StatusForbidden, code: CodeForbiddenOrigin,
		message: message + "; list the page's origin with -cors-origin to allow it"})
}

// corsHeaders grants origin, a -cors-origin origin, access; on a
// preflight they say what it may send, Private Network Access included.
func corsHeaders(h http.Header, origin string, r *http.Request) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions {
		return
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
}

// sameOrigin reports whether origin is the origin r was sent to: the
// scheme of the connection and the Host the browser named. The Host check
// has already run, so on a loopback bind the Host is a loopback name.
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host) || strings.EqualFold(origin, scheme+defaultPortless(r.Host, r.TLS != nil))
}

// defaultPortless drops the default port from host, as browsers do in an
// Origin.
func defaultPortless(host string, tls bool) string {
	if tls {
		return strings.TrimSuffix(host, ":443")
	}
	return strings.TrimSuffix(host, ":80")
}

// crossSite reports whether a Sec-Fetch-Site value says another page sent
// the request. "same-site" counts: every port of 127.0.0.1 is the same
// site, so a page on another local port says same-site.
func crossSite(site string) bool {
	switch strings.ToLower(site) {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// hasBody reports whether requests of method carry a body to check.
func hasBody(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// jsonBody reports whether r's body may reach a handler: no body at all
// (GET, or an operator POST with nothing to say), or a JSON one.
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0 && len(r.TransferEncoding) == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
