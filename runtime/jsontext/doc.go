// Package jsontext holds the byte-level JSON helpers that the output
// pipeline, the scrubber, the sandbox, the config docs and the envelope
// check share: quoting a string without encoding/json's HTML escaping,
// finding where a string or a run of white space ends, and how deep
// arrays and objects nest. None of them validates; a caller that needs
// valid JSON checks it first.
package jsontext
