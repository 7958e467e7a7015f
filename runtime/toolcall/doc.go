// Package toolcall holds the types every tool call crosses: the Caller that
// generated Go stubs, the sandbox bridge and the meta-tools all dispatch
// through, and the Result that carries a backend's answer back unchanged.
// It also owns the meta-tools' names (metatools.go), which the server, the
// config's reserved names and the sandbox's hints all read.
package toolcall
