// Package poison checks what a backend tells the model — tool, parameter
// and prompt descriptions, titles, server instructions and tool names — for
// the shapes of published tool-poisoning attacks: instructions aimed at the
// model, markup that fakes authority, invisible or deceptive Unicode, tool
// names that imitate another backend's by confusable skeleton, exfiltration
// URLs, and a description that suddenly grows.
//
// The rules are data: one table (rules.go), each entry with a text that
// must trip it and a near miss that must not, so a reviewer reads every
// rule and its test in one place. The generator prints the findings as
// SUSPICIOUS lines and fails emit --strict on them; the catalog hides an
// unreviewed tool with a finding. It is pure Go over runtime/manifest, so
// both gen/ and runtime/ import it.
//
// The checks are a tripwire for review, not a proof of innocence: a
// paraphrase no rule names passes. Their false-positive rate is measured on
// every real description in shared/bench (poison_bench_test.go).
package poison
