// Package catalog keeps the gateway's view of its backends current while
// kiln runs. The compiled manifests are the start-up truth; the catalog
// replaces a backend's tools with its live list when the backend drifts
// (found on connect and on tools/list_changed), adds and removes backends
// registered by register_manual, and after each change publishes a new View:
// the search index with an overlay of the changed tools and the sandbox
// bridge that binds them. Readers take the current View without locks.
package catalog
