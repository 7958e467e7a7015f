// Package route decides which backend owns a resource URI: an exact URI a
// backend lists, else the first RFC 6570 template (levels 1-3) that
// matches, backends taken in declared (name) order. kiln-gen emit warns
// with the same rule that kiln serve routes by, so a reviewer sees who wins
// a contested URI before it ships.
package route
