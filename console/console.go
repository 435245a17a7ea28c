// Package console is Lethe's web console: a single-page application for a
// browser, served by lethe serve at /_explorer/, to look at databases,
// containers and documents, run queries, set a container's Time to Live as
// in the Azure portal, and see what TTL is doing to the data (the purge's
// backlog, the documents expiring in each coming minute and hour).
//
// The pages are static files embedded in the binary and need no key: the
// application signs every API call in the browser with the account key
// (WebCrypto HMAC-SHA256), as the Cosmos DB SDKs do. What the Cosmos REST API
// lacks comes from Lethe's admin API (/_lethe/, gateway/admin.go).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is the path the console is served under.
const Prefix = "/_explorer/"

//go:embed static
var static embed.FS

// securityPolicy is the pages' Content-Security-Policy: scripts, styles and
// connections from this origin only, no inline script or style, no plugins,
// no framing.
const securityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files under Prefix; any other path below it
// gets the application's page, so that a reload of a deep link works.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	server := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", securityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "The console's files are read with GET.", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" || !exists(files, name) {
			name = "index.html"
		}
		if name == "index.html" {
			// The file server redirects /index.html to /: serve its bytes.
			page, err := fs.ReadFile(files, name)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + path.Clean(name)
		server.ServeHTTP(w, r2)
	})
}

// exists reports whether name is a file of the console.
func exists(files fs.FS, name string) bool {
	st, err := fs.Stat(files, path.Clean(name))
	return err == nil && !st.IsDir()
}

// WantsPage reports whether a request for the account root comes from a
// browser asking for a page (Accept names text/html), which is redirected to
// the console; SDKs ask for JSON.
func WantsPage(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
}
