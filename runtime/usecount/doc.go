// Package usecount counts the tool calls that succeed, per tool, and keeps the
// counts in the state folder across restarts. Search asks it for a boost,
// so tools an installation relies on rank first among equals; it is its
// own package because counting calls is not searching, and the dispatcher
// feeds it.
package usecount
