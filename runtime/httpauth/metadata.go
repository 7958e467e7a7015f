package httpauth

import (
	"encoding/json"
	"net/http"
)

// metadataPath is RFC 9728's well-known location; a resource with a path
// (such as /mcp) also answers at metadataPath + that path.
const metadataPath = "/.well-known/oauth-protected-resource"

// resourceMetadata is the RFC 9728 protected resource metadata document.
// scopes_supported is omitted: kiln has no scopes, any valid token for the
// audience grants everything.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// serveMetadata answers the metadata paths and reports whether it did.
// RFC 9728 section 3.3 requires the resource to match the URL the document
// was fetched for, so the /mcp variant names base/mcp.
func serveMetadata(w http.ResponseWriter, r *http.Request, base, issuer string) bool {
	var doc resourceMetadata
	switch r.URL.Path {
	case metadataPath:
		doc.Resource = base
	case metadataPath + "/mcp":
		doc.Resource = base + "/mcp"
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed")
		return true
	}
	if issuer != "" {
		doc.AuthorizationServers = []string{issuer}
	}
	doc.BearerMethodsSupported = []string{"header"}
	body, _ := json.Marshal(doc) // cannot fail: strings only
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(body, '\n'))
	}
	return true
}
