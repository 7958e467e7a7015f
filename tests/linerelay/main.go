// Command linerelay is the least a process between an MCP client and a
// stdio server can do, the yardstick BenchmarkEchoHop sets kiln beside:
// what any gateway hop costs on the machine at hand before it does any
// work of its own.
//
//	linerelay [--decode] -- CMD [ARGS...]
//
// It starts CMD and copies its own stdin to CMD's stdin and CMD's stdout
// to its own stdout. With --decode each line is read, decoded into a map
// and encoded again in both directions: the "two decodes, one encode"
// a gateway hop is often said to cost, with nothing else.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	decode := flag.Bool("decode", false, "decode and re-encode every line")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: linerelay [--decode] -- CMD [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	relay := copyAll
	if *decode {
		relay = decodeLines
	}
	go func() {
		relay(in, os.Stdin)
		in.Close()
	}()
	relay(os.Stdout, out)
	_ = cmd.Wait()
}

func copyAll(dst io.Writer, src io.Reader) { _, _ = io.Copy(dst, src) }

// decodeLines forwards src to dst a line at a time through a decode and
// an encode, as a gateway that looks at each message would.
func decodeLines(dst io.Writer, src io.Reader) {
	r := bufio.NewReaderSize(src, 1<<16)
	enc := json.NewEncoder(dst)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var msg map[string]any
			if json.Unmarshal(line, &msg) == nil {
				_ = enc.Encode(msg)
			}
		}
		if err != nil {
			return
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "linerelay:", err)
	os.Exit(1)
}
