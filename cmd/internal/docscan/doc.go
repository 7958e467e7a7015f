// Package docscan reads the Markdown a person reads (README.md and docs/)
// into what the doc tests check: fenced blocks, command lines and
// relative links. It lives under cmd/ because the kiln and kiln-gen CLI
// packages check their own command lines with it (their flags are only
// reachable from inside cmd/kiln and cmd/kiln-gen); its own tests load
// every YAML block with the real config loader and resolve every link.
package docscan
