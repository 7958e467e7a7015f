package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/cmd/kiln-gen/internal/eval"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", stderr)
	tools := fs.String("tools", "", "tools.jsonl of a tool-retrieval dataset")
	queries := fs.String("queries", "", "queries.jsonl of the same dataset")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	ablation := fs.Bool("ablation", false, "also measure every step from the plain-BM25 baseline to the shipped ranker")
	vectors := fs.String("vectors", "", "also measure the static word-vector tier built from this word-vector file (GloVe text or wink JSON)")
	top := fs.Int("vectors-top", static.DefaultTop, "with --vectors: keep the tools' words plus this many most frequent words")
	sweep := fs.Bool("vectors-sweep", false, "with --vectors: also measure other cuts, weights and depths")
	var m modelFlags
	m.register(fs, "also measure the embedding ranking alone and fused with the lexical one")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if *tools == "" || *queries == "" {
		fmt.Fprintln(stderr, "kiln-gen eval: both --tools and --queries are required, e.g. --tools ../shared/bench/toolbench/tools.jsonl --queries ../shared/bench/toolbench/queries.jsonl")
		return exitUsage
	}
	opts := eval.Options{Ablation: *ablation}
	mod, code := m.open("eval", stderr, stderr)
	if code != exitOK {
		return code
	}
	if mod != nil {
		defer mod.embedder.Close()
		opts.Semantic = &eval.SemanticOptions{Embedder: mod.embedder, Model: mod.name}
	}
	if *vectors != "" {
		raw, err := static.Read(*vectors)
		if err != nil {
			fmt.Fprintf(stderr, "kiln-gen eval: %v\n", err)
			return exitFail
		}
		sha, err := semantic.FileSHA256(*vectors)
		if err != nil {
			fmt.Fprintf(stderr, "kiln-gen eval: %v\n", err)
			return exitFail
		}
		opts.Static = &eval.StaticOptions{Raw: raw, Source: *vectors, SHA256: sha, Top: *top, Sweep: *sweep}
	}
	rep, err := eval.Run(ctx, *tools, *queries, opts)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen eval: %v\n", err)
		return exitFail
	}
	if *asJSON {
		raw, err := rep.JSON()
		if err != nil {
			fmt.Fprintf(stderr, "kiln-gen eval: %v\n", err)
			return exitFail
		}
		fmt.Fprintln(stdout, string(raw))
		return exitOK
	}
	fmt.Fprint(stdout, rep.Table())
	return exitOK
}
