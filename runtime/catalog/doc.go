// Package catalog keeps the gateway's view of its backends current while
// kiln runs. The compiled manifests are the start-up truth and, for a
// compiled backend, what a pull request reviewed: when its live tools,
// resources or prompts drift (found on connect and on list_changed), the
// drift mode (gateway.drift, backends.NAME.drift; pin.go) decides what is
// served. Under pin, the default, the reviewed lists stay and the changes
// are held back (a held-back tool is known to the registry only as the
// reason a call of it is refused); under warn and follow the live lists
// replace them. Backends with no review (registered at run time, declared
// but not compiled in) follow. The catalog also adds and removes backends
// registered by register_manual, and after each change publishes a new
// View: the search index with an overlay of the changed tools and the
// sandbox bridge that binds them. Readers take the current View without
// locks.
package catalog
