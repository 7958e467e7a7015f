// Package textcut cuts strings to a byte budget without splitting a
// character: Prefix cuts on a UTF-8 rune boundary, Before and After on an
// approximate grapheme cluster boundary, so a flag or an accented letter
// is kept or dropped whole; Suffix is Prefix's mirror.
package textcut
