package search

// Field names one indexed part of a tool.
type Field uint8

// The indexed fields of a tool, in storage order.
const (
	FieldName        Field = iota // tool name, split on _ - . and camelCase
	FieldTitle                    // human-readable title, when the tool has one
	FieldBackend                  // backend (server) name
	FieldDescription              // tool description
	FieldParamName                // top-level input property names
	FieldParamDesc                // top-level input property descriptions
	FieldGloss                    // English glosses of the tool's Chinese words (chineseGloss)
	numFields
)

// Stemmer selects how words are conflated before indexing and querying.
type Stemmer uint8

// The stemmers Config.Stem accepts.
const (
	StemNone   Stemmer = iota // exact words
	StemPlural                // Harman's S-stemmer: plural forms only
	StemPorter                // Porter (1980): plurals, -ing, -ed, -ation, ...
	StemLight                 // Porter's steps 1 and 5: plurals, -ed, -ing, final -e
)

// CJKMode selects how runs of Chinese, Japanese and Korean characters, which
// carry no spaces, become tokens.
type CJKMode uint8

// The CJK modes Config.CJK accepts.
const (
	CJKUnigram CJKMode = iota // each character a token
	CJKBigram                 // overlapping character pairs (a lone character stays a token)
	CJKBoth                   // unigrams and bigrams
)

// Config holds every ranking choice baked into an index. It travels inside
// the frozen form, so queries are always tokenized the way the index was.
type Config struct {
	// K1 and B are the Okapi BM25 saturation and length-normalisation
	// constants.
	K1, B float64
	// Weights scales each field's term frequencies; 0 leaves it unindexed.
	Weights [numFields]float64
	// FieldNorm normalises each field's length against that field's average
	// (BM25F); false normalises the weighted total length of the tool, which
	// with integer weights is plain BM25 over the concatenated text.
	FieldNorm bool
	// FieldB is the per-field length normalisation used when FieldNorm is set.
	FieldB [numFields]float64
	// Stem conflates word forms.
	Stem Stemmer
	// CJK selects the tokens of CJK text.
	CJK CJKMode
	// AcronymPlural keeps a trailing "s" on an acronym ("IDs", "URLs",
	// "APIs") instead of splitting it off as a camelCase word ("I", "Ds").
	AcronymPlural bool
	// SplitDigitUpper splits camelCase at a digit followed by a capital
	// ("v2Api" → "v2", "api").
	SplitDigitUpper bool
	// BackendWeight mixes in the score of the tool's backend as a whole (all
	// its tools' names and descriptions as one document): tools of a backend
	// that matches the task rank higher. 0 disables it.
	BackendWeight float64
	// Bigram scales the score of adjacent word pairs matched in order
	// ("word cloud", "convert [to] pdf"), as in Metzler and Croft's
	// sequential dependence model; 0 indexes no pairs.
	Bigram float64
	// NameCover multiplies a tool's tier-1 score by 1 + NameCover·c, where c
	// is the share of the words of its name that the query contains: a query
	// that spells out a whole name ("convert ... to pdf") names that tool.
	NameCover float64
	// QueryStop drops, from queries only, the words of requests addressed
	// to someone ("I want you to help me ...", "Can you please ..."):
	// pronouns, contraction endings and request verbs (queryStopWords).
	// Tool text keeps them, and a query made only of them keeps them.
	QueryStop bool
	// Feedback expands a query by pseudo-relevance feedback (RM3, Lavrenko
	// and Croft 2001): the best-ranked tools' words, weighted by the tools'
	// scores and by idf, are searched again at a fraction of the query's
	// weight. Zero Docs disables it. It is off in DefaultConfig: it lifts
	// LiveMCPBench but costs more than the rest of a query (see feedback).
	Feedback Feedback
	// Synonyms scales the score of the tool-vocabulary synonyms of each
	// query word (synonymGroups: "remove" also searches "delete") in tools
	// that lack the word itself; 0 searches the query's own words only.
	// The table is frozen with the index.
	Synonyms float64
	// Assoc expands each tool with the words associated with its own in
	// the indexed tools' texts (assocTerms). The association table is
	// frozen with the index, so tools registered at run time expand the
	// same way.
	Assoc Assoc
	// Implied is the rank at which a task's ranking lists the best tool
	// for the step that the files and directories it names imply: a task
	// that ends "... and save it to /root/notes/x.md" wants a tool that
	// writes files, though no word of it says so (impliedStep, Doc.Takes).
	// 0 adds no such tool.
	Implied int
	// FileWords scales the words of the file types that the query's file
	// names and paths end in (fileTypes: ".xlsx" also searches "excel
	// spreadsheet"), each searched unless the query holds it already; 0
	// disables it.
	FileWords float64
}

// Feedback configures pseudo-relevance feedback.
type Feedback struct {
	// Docs is how many top tools are read; Terms how many of their words
	// join the query; Weight scales the added words against a query word
	// (the best added word gets Weight, the others less).
	Docs, Terms int
	Weight      float64
}

// DefaultConfig is the configuration Build uses and kiln-gen emit ships.
// kiln-gen eval's ablation table measures each choice on LiveMCPBench and
// ToolBench; the values are round numbers from a plateau that helps both,
// not a per-dataset optimum. A title restates the name, which already
// weighs 2, so it gets half weight: enough to find a tool whose name is
// cryptic, without counting the name twice.
//
// Measured and rejected (nDCG@5 LiveMCPBench / ToolBench, shipped 0.366 /
// 0.721): k1 0.9-2.0 and b 0.5-0.9 (within ±0.012 / ±0.009, none better on
// both); name weight 1.5 or 3, backend field 0.5 or 2, parameters 0.5;
// query term frequency (Robertson's k3 0.5-100: 0.367-0.336 / 0.725-0.706);
// Lucene's coordination factor (0.360-0.326 / 0.718-0.691); idf raised to
// 1.25-2 (0.361-0.353 / 0.722-0.720); digits dropped from queries (0.368 /
// 0.715); file paths in queries replaced by "file" and their extension
// (0.361-0.344 / unchanged); first description sentence counted twice
// (0.350 / 0.717); a score penalty per extra tool of one backend (0.360 /
// 0.713 and worse). Feedback (Docs 5, Terms 5, Weight 0.2) lifts the task
// alone to 0.377 but costs ToolBench 0.002 and the task with steps 0.587 →
// 0.561, so it stays off.
//
// Vocabulary (shipped .391 / .722 against .366 / .721 without): English
// glosses of Chinese tool words lift LiveMCPBench to .381 (6 queries
// better, none worse; ToolBench unchanged); tool-vocabulary synonyms then
// add .010 (.387-.391 for weights 0.25-0.5, .384 at 1; ToolBench
// .720-.722). Rejected (measured with the glosses alone, .381 / .721,
// unless said): the same synonyms with every synonym's score added (.392 /
// .719, 20 ToolBench queries better, 31 worse) or only for query words no
// tool holds (no change, without glosses); synonyms of a tool's name words
// indexed (.378 / .723); WordNet 3.0 synonyms (earlier, .363-.368 /
// .715-.722); a longer request-word list (need, tell, know, thanks, ...:
// unchanged; with wh-words and auxiliaries .376 / .721); BM25+'s lower
// bound δ 0.25-1 (.371-.377 / .720-.701); query file paths cut to their
// base name (.386 / .720); a tool whose name a better hit already has
// moved down (.382 / .723).
//
// Scoring models in BM25F's place, each with the rest of this
// configuration (shipped .387 / .720): DFR InL2 with normalisation 2 (c
// 0.5-7: .357-.352 / .723-.693; c 1 .356 / .720); query likelihood with
// Dirichlet smoothing over field-weighted counts (mu 10 .334 / .624, 30
// .357 / .654, 100 .377 / .689, 300 .379 / .709, 1000 .363 / .728, 2000
// .353 / .731). Mixed into BM25F's ranking (each score divided by its best,
// BM25F plus 0.25-1 times the other): Dirichlet mu 300 .385-.379 /
// .722-.723, mu 1000-2000 .379-.366 / .724-.732, InL2 .379-.369 /
// .719-.724. None helps LiveMCPBench; Dirichlet's ToolBench gain costs it
// .008 or more, so BM25F stays. Splitting a task into its steps is
// SplitTask's (measured there and at AnchorWeight).
//
// Meaning from the fleet's own texts (shipped .392 / .730 against .387 /
// .720 without; with SplitTask's steps, search_tools' default, .394 /
// .745 against .386 / .733; with LiveMCPBench's annotated steps .595
// against .596): Assoc lends each tool of at most 20 words of its own, at
// 0.15, the words most associated (G² over tools, 5 a word, from 3 tools
// or more) with its own, at most 12. Weights 0.1-0.3 all give .394 /
// .728-.729 for the task alone, but at 0.1 SplitTask's steps fall below
// the task (.391) and from 0.2 the annotated steps lose .003-.004; 0.15
// is neutral or better on every path. Around it: 3 or 8 a word .385 /
// .727 and .392 / .727; from 2 tools .391 / .730; 8 a tool .387 / .727,
// uncapped .387 / .729 for 2.4 times the postings; tools of at most 12
// words, or every tool, .392 / .728 (at 0.1, at most 6 or 9: .391-.392 /
// .724-.726); parameter text as a source too (at 0.1, every tool,
// uncapped) .389 / .726.
// Rejected, measured at 0.1 on every tool, uncapped (G² there .385-.389
// / .724-.725): associations by P(b|a)·idf (.389-.391 / .724), Dice
// (.385 / .722), co-occurrence
// counted in distinct backends rather than tools (.379 / .723), cosine
// neighbours in a rank-200 latent semantic analysis (randomized SVD of
// the idf-weighted term × tool matrix; .376-.384 / .719-.725), common
// associates (in over 2 or 5% of tools) skipped (.384 / .723, .382 /
// .724; capped at 12, dropped rather than replaced, .383-.390 /
// .724-.727); the tool simply holding its associates, so they count in
// document frequency and every associated word's idf falls (G² or Dice,
// 2-10 associates at 0.05-0.3: .370-.382 / .730-.738; PMI .366 / .722).
// Associates added to the query instead, like Synonyms, in tools lacking
// the query word (the best associate per word): none was neutral on
// ToolBench (G², Dice, P(b|a)·idf or PMI, 1-8 associates at 0.1-0.3:
// .368-.397 / .706-.720; LSA .373-.393 / .715-.719; every associate's
// score added .380 / .707).
//
// Re-ranking for coverage (measured before Assoc, shipped .387 / .720):
// each next hit of the top 30 chosen by (1-λ)·score/best plus λ times the
// idf share of the query words it holds that no hit above it held, as in
// xQuAD, costs LiveMCPBench at every λ (.05 .382, .1 .385, .2 .377, .5
// .369; a half-covered word's credit halved instead of spent: the same)
// and moves ToolBench by .002 at most: its tasks' relevant tools share
// words more often than they split them.
//
// The values a task names (shipped .439 / .730 against .392 / .730
// without; with SplitTask's steps .441 / .745 against .394 / .745; R@5
// .490 / .763, MRR@10 .551 / .822; LiveMCPBench's annotated steps .595,
// unchanged): 42 of its 94 tasks name a file or directory ("... and save
// it to /root/notes/x.md") whose tool no word of the task names; seven
// ToolBench tasks name one. Implied lists at rank 2 the best tool for the
// step the path implies ("write file markdown") among the tools whose
// schema takes a path (18 LiveMCPBench tasks better, 11 worse); at rank 1
// .452 / .730 (steps .456 / .744, ToolBench MRR@10 .820 against .822), at
// rank 3 .430 / .730. FileWords 0.5 adds .006 (alone .395 against .392;
// at 1 .397, the same with Implied). Around them, at rank 2 and with
// synonyms in the step's search unless said: the step's tool found among
// every tool, not only those taking a path, .396 (rank 1); one step for
// the task's first path .442, for its last .436, one for each path at
// ranks 2, 3, ... .438; every file read as "file", neither read nor
// written, .395 (rank 1), every file written .444 (read files then find
// writers); "to" before a path alone marking it written .412, verbs alone
// .440; directories left out .436; a URL's step ("fetch url") .434 /
// .729, an e-mail address's ("send email") .440 / .730 (steps .744), a
// date's ("date", without synonyms) .439 / .730, no change (so Kinds
// holds paths only; URLs and e-mail addresses are only told from them). The
// step's search leaves synonyms out (.440 with them, .455 at rank 1): its
// words are kiln's own, and each is one more walk of postings.
// Rejected, measured without Implied (.392 / .730): a tool that matches
// the task and takes a kind of value it names (a path, URL, e-mail
// address or date) scored 1.1-3 times (.390 at 1.1, .392 at 1.2,
// down to .351 / .722 at 3), or only the best 1-3 such tools of each kind
// (.381-.392 / .731): the tools it lifts are those the task's words found
// already, while the file a task reads or writes needs a tool no word of
// it names; the value's kind as a query word ("file", "directory", "url",
// "email", "date"; with FileWords 1) at 0.25-3 .394-.405 / .728-.730
// (steps .744 from 1), in tools taking that kind only .397 / .731, or as
// a flat score to them .390-.396; with Implied at rank 1 these words add
// .002 and cost ToolBench .001.
func DefaultConfig() Config {
	c := Config{
		K1:              1.2,
		B:               0.75,
		Stem:            StemLight,
		CJK:             CJKBigram,
		AcronymPlural:   true,
		SplitDigitUpper: true,
		BackendWeight:   0.3,
		Bigram:          0.3,
		NameCover:       0.5,
		QueryStop:       true,
		Synonyms:        0.5,
		Assoc:           Assoc{Terms: 5, MinTools: 3, Weight: 0.15, PerTool: 12, MaxWords: 20},
		Implied:         2,
		FileWords:       0.5,
	}
	c.Weights = [numFields]float64{
		FieldName:        2,
		FieldTitle:       0.5,
		FieldBackend:     1,
		FieldDescription: 1,
		FieldParamName:   0.25,
		FieldParamDesc:   0.25,
		FieldGloss:       0.5,
	}
	for f := range c.FieldB {
		c.FieldB[f] = c.B
	}
	return c
}
