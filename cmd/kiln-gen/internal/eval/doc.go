// Package eval measures search_tools ranking on the tool-retrieval bench
// format (tools.jsonl, queries.jsonl; see bench/README.md): Recall@5,
// nDCG@5 and MRR@10 with binary relevance, and which tier answered each
// query. It builds exactly the index kiln-gen emit builds (search.NewDoc,
// search.Build), so the numbers describe the shipped ranker, and it can run
// an ablation ladder that adds one ranking choice at a time.
package eval
