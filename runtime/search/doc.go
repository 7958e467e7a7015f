// Package search finds tools for a natural-language task without a model.
//
// It ranks in three tiers, each tried only when the one before returned
// nothing:
//
//  1. BM25 (k1 1.2, b 0.75) over a tool's fields with their own weights: the
//     name split on _ - . and camelCase (2), title (0.5), backend (1),
//     description (1), parameter names and descriptions (0.25 each), plus
//     adjacent word pairs (0.3), the tool's backend scored as one document
//     (0.3) and a bonus for queries that spell out a whole tool name.
//     A tool described in Chinese also holds English glosses of its common
//     words (0.5, chineseGloss), and a query word also searches its
//     tool-vocabulary synonyms (0.5, synonymGroups), once per word and only
//     in tools that lack the word itself. Each tool also holds, at 0.15,
//     the words the fleet's own texts most associate with its words
//     (Dunning's G² over the tools sharing them, learned at build time):
//     "weather" finds a tool that only says "forecast".
//     Optionally (Config.Feedback, off by default) the best tools' words
//     then expand the query (pseudo-relevance feedback, RM3).
//     A file or directory the task names implies a step no word of it
//     spells out ("... save it to /root/notes/x.md"): the best tool for
//     that step ("write file markdown"), among the tools whose input
//     schema takes a path, ranks second (Config.Implied), and the file's
//     type adds its words (".xlsx": excel spreadsheet, Config.FileWords).
//  2. Trigram similarity of each query word to tool names, for partial or
//     run-together words ("websrch" → web_search).
//  3. Levenshtein correction of unknown query words against the index's
//     vocabulary ("serch" → search), then BM25.
//
// Text is lower-cased, Lucene's 33 English stop words are dropped (and,
// from queries only, the pronouns and request verbs of "can you help me"),
// inflections are folded (Porter's steps 1 and 5) and CJK text becomes
// overlapping character pairs. kiln-gen eval measures every one of these choices
// on LiveMCPBench and ToolBench; DefaultConfig documents the result. A
// caller's usage boost (Options.Boost, see runtime/usecount) multiplies scores within
// a tier.
//
// SearchSteps searches a multi-step task's steps and the task and
// interleaves the rankings, so every step's best tool comes early.
// SearchTask, search_tools' ranking, does so with the agent's steps, or
// without them with the steps SplitTask finds in the task ("..., then
// ...", sentences, lists), each step's ranking anchored to the task's
// (MergeAnchored); a task of one step is searched alone.
//
// TryAlso offers words for a follow-up query: each backend's most
// distinctive terms (field weight times idf), ranked once when the backend
// is indexed, so a call only drops the words the query already has.
//
// Lifecycle: kiln-gen emit calls Build and MarshalBinary and embeds the
// bytes; the gateway calls LoadString (or Load) at start-up, which decodes
// postings with their precomputed weights and rebuilds nothing, then Search
// from any goroutine. Tools registered or removed at run time go through
// With, which returns a new Index layering a small overlay on the frozen
// base; the base is never rebuilt and an ID is never listed twice.
package search
