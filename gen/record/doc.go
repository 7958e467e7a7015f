// Package record is kiln-gen's only networked code: it connects to every
// enabled backend in a config, lists what each offers and writes one
// canonical manifest per backend. A failing backend is reported with the
// tail of its stderr and does not stop the others from being recorded.
package record
