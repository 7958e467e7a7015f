package main

import (
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		switch args[0] {
		case "stream":
			return streamCmd(args[1:], stdin, stdout, stderr)
		case "summary":
			return summaryCmd(args[1:], stdout, stderr, getenv)
		}
	}
	fmt.Fprintln(stderr, "usage: testreport stream [-quiet] FILE < go-test-json | testreport summary DIR")
	return 2
}
