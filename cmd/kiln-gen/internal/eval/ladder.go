package eval

import (
	"fmt"

	"github.com/kilnmcp/kiln/runtime/search"
)

// Step is one configuration of the ablation ladder.
type Step struct {
	Name   string
	Config search.Config
}

// Baseline is the README's plain Okapi BM25 (k1 1.2, b 0.75): one bag of
// words per tool, camelCase split, Lucene stop words, no stemming, CJK
// unigrams. withServer indexes "server + name x2 + description" instead of
// "name + description".
func Baseline(withServer bool) search.Config {
	c := search.Config{K1: 1.2, B: 0.75, CJK: search.CJKUnigram, SplitDigitUpper: true}
	c.Weights[search.FieldName] = 1
	c.Weights[search.FieldDescription] = 1
	if withServer {
		c.Weights[search.FieldName] = 2
		c.Weights[search.FieldBackend] = 1
	}
	for f := range c.FieldB {
		c.FieldB[f] = c.B
	}
	return c
}

// Ladder returns the ablation steps: the two README baselines, then one
// ranking choice added at a time up to the shipped configuration, then the
// shipped configuration with one choice removed or swapped for its
// alternative.
func Ladder() []Step {
	c := Baseline(true)
	steps := []Step{
		{"baseline: name+desc", Baseline(false)},
		{"baseline: server+name x2+desc", c},
	}
	add := func(name string, change func(*search.Config)) {
		change(&c)
		steps = append(steps, Step{name, c})
	}
	add("+ acronym plurals (IDs, URLs)", func(c *search.Config) { c.AcronymPlural = true })
	add("+ light stemming (Porter steps 1, 5)", func(c *search.Config) { c.Stem = search.StemLight })
	add("+ param names & descs (0.25)", func(c *search.Config) {
		c.Weights[search.FieldParamName] = 0.25
		c.Weights[search.FieldParamDesc] = 0.25
	})
	add("+ title (0.5)", func(c *search.Config) { c.Weights[search.FieldTitle] = 0.5 })
	add("+ CJK bigrams", func(c *search.Config) { c.CJK = search.CJKBigram })
	add("+ word pairs (0.3)", func(c *search.Config) { c.Bigram = 0.3 })
	add("+ backend document (0.3)", func(c *search.Config) { c.BackendWeight = 0.3 })
	add("+ name coverage (0.5)", func(c *search.Config) { c.NameCover = 0.5 })
	add("+ query request words dropped", func(c *search.Config) { c.QueryStop = true })
	add("+ English glosses of Chinese words (0.5)", func(c *search.Config) { c.Weights[search.FieldGloss] = 0.5 })
	add("+ tool-vocabulary synonyms (0.5)", func(c *search.Config) { c.Synonyms = 0.5 })
	add("+ short tools expanded by corpus word associations (5 a word, 12 a tool, 0.15)", func(c *search.Config) {
		c.Assoc = search.Assoc{Terms: 5, MinTools: 3, Weight: 0.15, PerTool: 12, MaxWords: 20}
	})
	add("+ file type words of named files (0.5)", func(c *search.Config) { c.FileWords = 0.5 })
	add("+ the tool of a named file's implied step at rank 2", func(c *search.Config) { c.Implied = 2 })

	alt := func(name string, change func(*search.Config)) {
		c := search.DefaultConfig()
		change(&c)
		steps = append(steps, Step{name, c})
	}
	alt("shipped, no stemming", func(c *search.Config) { c.Stem = search.StemNone })
	alt("shipped, plural stemmer (Harman S)", func(c *search.Config) { c.Stem = search.StemPlural })
	alt("shipped, full Porter stemmer", func(c *search.Config) { c.Stem = search.StemPorter })
	alt("shipped, no params", func(c *search.Config) {
		c.Weights[search.FieldParamName] = 0
		c.Weights[search.FieldParamDesc] = 0
	})
	alt("shipped, no title", func(c *search.Config) { c.Weights[search.FieldTitle] = 0 })
	alt("shipped, CJK unigrams", func(c *search.Config) { c.CJK = search.CJKUnigram })
	alt("shipped, CJK unigrams+bigrams", func(c *search.Config) { c.CJK = search.CJKBoth })
	alt("shipped, no word pairs", func(c *search.Config) { c.Bigram = 0 })
	alt("shipped, no backend document", func(c *search.Config) { c.BackendWeight = 0 })
	alt("shipped, no name coverage", func(c *search.Config) { c.NameCover = 0 })
	alt("shipped, per-field length norm (BM25F)", func(c *search.Config) { c.FieldNorm = true })
	alt("shipped, query request words kept", func(c *search.Config) { c.QueryStop = false })
	alt("shipped, no Chinese glosses", func(c *search.Config) { c.Weights[search.FieldGloss] = 0 })
	alt("shipped, no synonyms", func(c *search.Config) { c.Synonyms = 0 })
	alt("shipped, synonyms at 0.25", func(c *search.Config) { c.Synonyms = 0.25 })
	alt("shipped, synonyms at 1", func(c *search.Config) { c.Synonyms = 1 })
	alt("shipped, no word associations", func(c *search.Config) { c.Assoc = search.Assoc{} })
	alt("shipped, 3 word associations", func(c *search.Config) { c.Assoc.Terms = 3 })
	alt("shipped, 8 word associations", func(c *search.Config) { c.Assoc.Terms = 8 })
	alt("shipped, word associations at 0.1", func(c *search.Config) { c.Assoc.Weight = 0.1 })
	alt("shipped, word associations at 0.2", func(c *search.Config) { c.Assoc.Weight = 0.2 })
	alt("shipped, word associations at 0.3", func(c *search.Config) { c.Assoc.Weight = 0.3 })
	alt("shipped, word associations from 2 tools", func(c *search.Config) { c.Assoc.MinTools = 2 })
	alt("shipped, 8 associated words a tool", func(c *search.Config) { c.Assoc.PerTool = 8 })
	alt("shipped, associated words a tool uncapped", func(c *search.Config) { c.Assoc.PerTool = 0 })
	alt("shipped, tools of 12 words or fewer expanded", func(c *search.Config) { c.Assoc.MaxWords = 12 })
	alt("shipped, every tool expanded", func(c *search.Config) { c.Assoc.MaxWords = 0 })
	alt("shipped, no file type words", func(c *search.Config) { c.FileWords = 0 })
	alt("shipped, file type words at 1", func(c *search.Config) { c.FileWords = 1 })
	alt("shipped, no implied step", func(c *search.Config) { c.Implied = 0 })
	alt("shipped, implied step at rank 1", func(c *search.Config) { c.Implied = 1 })
	alt("shipped, implied step at rank 3", func(c *search.Config) { c.Implied = 3 })
	for _, fb := range []search.Feedback{{Docs: 5, Terms: 5, Weight: 0.2}, {Docs: 10, Terms: 5, Weight: 0.2}, {Docs: 5, Terms: 5, Weight: 0.4}} {
		alt(fmt.Sprintf("shipped + feedback (%d tools, %d words, %.1f)", fb.Docs, fb.Terms, fb.Weight),
			func(c *search.Config) { c.Feedback = fb })
	}
	return steps
}
