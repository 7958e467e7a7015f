// Package safe keeps a panic on one of kiln's own goroutines from ending
// the gateway. A goroutine gets no recovery from the code that started it,
// so one bad message from a backend (a tool list, a notification, a
// resource template) handled on a goroutine of its own would otherwise
// stop every client's session at once; recovered, it is one failed piece
// of work, logged with its stack.
package safe
