// Package scrub removes secrets from text before it leaves kiln. Tool
// results from every tier, error messages, backend stderr tails, resources
// and logs pass through one *Scrubber, which replaces each secret with a
// typed marker such as [REDACTED:github-token] so a reader (model or human)
// still sees that something was there and what kind of thing it was.
//
// Two sources of secrets are recognised:
//
//   - Shapes: AWS access key IDs, GitHub, OpenAI, Anthropic, Stripe, Slack
//     and Google API keys, JWTs, PEM private key blocks, passwords in URLs,
//     bearer tokens, and the value side of NAME=value / NAME: value /
//     "name": "value" assignments whose name says it holds a secret.
//   - Known values: the env and header values the config hands to backends
//     (Options.Values), redacted wherever they appear as [REDACTED:env:NAME].
//
// Detection is a single hand-written pass over the bytes rather than a set
// of regular expressions: every result goes through it and results reach
// 200 KB and more. One alternation of these shapes in Go's regexp ran at
// 2 MB/s on BenchmarkScrub's input, this pass at 100-200 MB/s. Each shape
// is anchored on a literal (a prefix such as "ghp_", the "://" of a URL,
// the "=" or ":" of an assignment) and checked only where the anchor
// appears.
//
// Secrets are also caught when their shape is cut or hidden: a private key
// seen from its END line back, or as a run of body lines with no marker (a
// stderr tail that starts mid-key), and tokens URL-encoded, HTML- or
// backslash-escaped or split by invisible characters, which are decoded
// around where the encoding appears and redacted in their original form
// (pem.go, decode.go).
//
// The scrubber prefers redacting too much over too little, but the
// look-alike and benign corpora in testdata keep it honest: git SHAs,
// hashes, UUIDs, base64 images, certificates, pagination cursors, token
// counts and prose that mentions a password survive.
package scrub
