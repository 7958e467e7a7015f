package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The prompts, after the anchor gateway's (seed 004).
const (
	promptDiscover = "discover"
	promptFindTool = "find_tool"
	promptStatus   = "backend_status"
)

// findToolHits is how many matches find_tool shows: enough to choose from,
// few enough that each keeps its example.
const findToolHits = 5

var errPromptPanic = errors.New("internal error; the gateway logged it")

func (s *Server) addPrompts() {
	s.mcp.AddPrompt(mcp.NewPrompt(promptDiscover,
		mcp.WithPromptDescription("How to explore kiln's backends and tools, for a topic or in general."),
		mcp.WithArgument("topic", mcp.ArgumentDescription(`What you want to work on, e.g. "github issues" or a backend name; omit for a general tour.`))),
		s.prompt(promptDiscover, s.discover))
	s.mcp.AddPrompt(mcp.NewPrompt(promptFindTool,
		mcp.WithPromptDescription("Search kiln's tools for a task and list the best matches with call examples."),
		mcp.WithArgument("task", mcp.RequiredArgument(), mcp.ArgumentDescription(`What you want to do, in plain words, e.g. "read a file".`))),
		s.prompt(promptFindTool, s.findTool))
	s.mcp.AddPrompt(mcp.NewPrompt(promptStatus,
		mcp.WithPromptDescription("The gateway's health in words, or one backend's state, errors and stderr."),
		mcp.WithArgument("backend_name", mcp.ArgumentDescription("A backend to describe in detail; omit for every backend."))),
		s.prompt(promptStatus, s.backendStatus))
	// Completion covers the prompts' and the resource templates' arguments,
	// so it is set up once both exist.
	s.addCompletions()
}

// prompt turns a text builder into a handler returning one user message,
// recovering panics the way meta-tools do.
func (s *Server) prompt(name string, build func(ctx context.Context, args map[string]string) (string, error)) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("prompt panicked", "prompt", name, "panic", p, "stack", string(debug.Stack()))
				res, err = nil, fmt.Errorf("prompt %s: %w", name, errPromptPanic)
			}
		}()
		text, err := build(ctx, req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %s", name, s.opts.Scrubber.String(err.Error()))
		}
		text = s.opts.Scrubber.String(text)
		return mcp.NewGetPromptResult(name, []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text))}), nil
	}
}

func (s *Server) discover(ctx context.Context, args map[string]string) (string, error) {
	topic := strings.TrimSpace(args["topic"])
	views := s.backends()
	var b strings.Builder
	b.WriteString("Explore the kiln MCP gateway")
	if topic != "" {
		fmt.Fprintf(&b, " for %q", topic)
	}
	fmt.Fprintf(&b, ". kiln serves %d tools from %d backends", len(s.opts.Registry.Tools()), len(views))
	if len(views) > 0 {
		fmt.Fprintf(&b, " (%s)", countStates(views))
	}
	b.WriteString(" through meta-tools; tool IDs look like backend.tool.\n\n")
	for _, v := range views {
		if topic != "" && strings.EqualFold(v.Name, topic) {
			fmt.Fprintf(&b, "%q is a backend (%s, %s): read kiln://backend/%s/tools for its tools with signatures and examples.\n\n",
				v.Name, v.State, plural(v.Tools, "tool"), v.Name)
		}
	}
	if topic == "" {
		fmt.Fprintf(&b, "1. Read %s for how kiln works, then %s (or list_tools_meta) for every tool in one line each.\n"+
			"2. For a task, call search_tools with a plain-words task_description; each result has a call example.\n", uriOverview, uriTools)
	} else {
		fmt.Fprintf(&b, "1. Call search_tools with task_description %q; each result has a call example.\n", topic)
		if ids := s.topHits(ctx, topic, 3); len(ids) > 0 {
			fmt.Fprintf(&b, "   Likely starting points: %s.\n", strings.Join(ids, ", "))
		}
		fmt.Fprintf(&b, "2. If nothing fits, rephrase with what the tool does (the try_also words in the results are good follow-ups), or browse %s.\n", uriTools)
	}
	fmt.Fprintf(&b, "3. Call tool_info with a tool's name for its parameters (detail \"full\" for the exact schema).\n"+
		"4. Run it with call_tool_chain: a JSON call {\"tool\": \"backend.tool\", \"arguments\": {...}} or TypeScript; "+
		"read %s before writing a program.\n"+
		"If a call fails, read %s for what is down and when kiln retries.\n", uriChainGuide, uriHealth)
	if len(views) > 0 {
		b.WriteString("\nBackends: ")
		parts := make([]string, 0, len(views))
		for _, v := range views {
			parts = append(parts, fmt.Sprintf("%s (%s, %s)", v.Name, v.State, plural(v.Tools, "tool")))
		}
		b.WriteString(joinMax(parts, 30) + "\n")
	}
	return b.String(), nil
}

func (s *Server) topHits(ctx context.Context, query string, n int) []string {
	var ids []string
	for _, h := range s.search(s.view(), query, nil, n, s.boostFor(ctx)) {
		if _, err := s.resolveVisible(ctx, h.ID); err == nil {
			ids = append(ids, h.ID)
		}
	}
	return ids
}

func (s *Server) findTool(ctx context.Context, args map[string]string) (string, error) {
	task := strings.TrimSpace(args["task"])
	if task == "" {
		return "", errors.New(`the "task" argument is required: describe what you want to do in plain words, e.g. "read a file"`)
	}
	v := s.view()
	if v == nil || v.Search == nil {
		return fmt.Sprintf("Tool search is not available in this kiln. Browse %s for every tool and pick one for: %s", uriTools, task), nil
	}
	var b strings.Builder
	n := 0
	var first string
	ref := refIn(v)
	for _, h := range s.search(v, task, nil, findToolHits, s.boostFor(ctx)) {
		t, err := s.resolveVisible(ctx, h.ID)
		if err != nil {
			continue // removed since the index was built
		}
		n++
		if n == 1 {
			fmt.Fprintf(&b, "Tools in kiln that match the task %q, best first:\n", task)
			first = t.Backend
		}
		fmt.Fprintf(&b, "\n%d. %s: %s\n   Signature: %s\n   Example: %s\n", n, t.ID(), FirstSentence(t.Description, 200), t.Signature(), t.Example(ref))
	}
	if n == 0 {
		return fmt.Sprintf("No tool in kiln matches the task %q. Call search_tools with other words (what the tool does, not its name), "+
			"or browse %s (%d tools).", task, uriTools, len(s.visibleTools(ctx))), nil
	}
	b.WriteString("\nPick the tool that fits. Call tool_info with its name if you need every parameter, then run it with call_tool_chain, " +
		"passing the example as code (`const r = await <example>; return r;`) with real argument values.")
	if more := tryAlso(v, first, task, 3); len(more) > 0 {
		fmt.Fprintf(&b, " If none fits, search_tools with other words, e.g. %s.", strings.Join(more, ", "))
	}
	b.WriteString("\n")
	return b.String(), nil
}

func (s *Server) backendStatus(_ context.Context, args map[string]string) (string, error) {
	name := strings.TrimSpace(args["backend_name"])
	if name == "" {
		return s.healthText(), nil
	}
	v, err := s.findBackend(name)
	if err != nil {
		return "", err
	}
	return s.backendText(v), nil
}

func (s *Server) healthText() string {
	h := s.health()
	var b strings.Builder
	fmt.Fprintf(&b, "Here is the kiln gateway's health as of %s. Tell the user what works, what does not and what to do next.\n\n%s\n", h.CheckedAt, h.Summary)
	for _, p := range h.Problems {
		fmt.Fprintf(&b, "\n- %s: %s", p.Backend, p.State)
		if p.Since != "" {
			fmt.Fprintf(&b, " since %s", p.Since)
		}
		// The advice names the next retry when there is one.
		fmt.Fprintf(&b, ": %s. %s.", p.Reason, p.Advice)
	}
	if len(h.Inactive) > 0 {
		fmt.Fprintf(&b, "\n\nOff on purpose: %s.", strings.Join(h.Inactive, ", "))
	}
	fmt.Fprintf(&b, "\n\n%s has the same as JSON; kiln://backend/{backend_name} has one backend's stderr.\n", uriHealth)
	return b.String()
}

func (s *Server) backendText(v backendView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Here is the state of kiln backend %q. Tell the user whether it can take calls and what to do next.\n\n", v.Name)
	fmt.Fprintf(&b, "State: %s", v.State)
	if v.Since != "" {
		fmt.Fprintf(&b, " since %s", v.Since)
	}
	origin := "compiled in"
	switch {
	case v.Dynamic:
		origin = "registered at run time"
	case !v.Compiled:
		origin = "not compiled in"
	}
	fmt.Fprintf(&b, " (%s; %s; %s)\n", cmp.Or(v.Transport, "no transport"), plural(v.Tools, "tool"), origin)
	if v.Note != "" {
		fmt.Fprintf(&b, "Note: %s\n", v.Note)
	}
	if v.Error != "" {
		fmt.Fprintf(&b, "Last error: %s\n", firstLine(v.Error, 500))
	}
	if v.status != nil {
		st := v.status
		fmt.Fprintf(&b, "Calls: %d, errors: %d, in flight: %d of at most %d", st.Calls, st.Errors, st.InFlight, st.MaxConcurrent)
		if st.Timeout > 0 {
			fmt.Fprintf(&b, "; call timeout %s", st.Timeout)
		}
		b.WriteString("\n")
		if st.Restarts > 0 || st.GaveUp {
			fmt.Fprintf(&b, "Restarts in the restart window: %d\n", st.Restarts)
		}
		if st.GaveUp {
			b.WriteString("kiln gave up restarting it.\n")
		}
		if st.ProbeFailures > 0 {
			fmt.Fprintf(&b, "Health probes failed in a row: %d\n", st.ProbeFailures)
		}
		if !st.LastHealthy.IsZero() {
			fmt.Fprintf(&b, "Last healthy: %s (%s)\n", stamp(st.LastHealthy), relative(st.LastHealthy, time.Now()))
		}
	}
	if v.Drift != nil {
		fmt.Fprintf(&b, "Tools changed since kiln was built: %s\n", v.Drift.Summary)
		if v.Drift.Served == "reviewed" {
			fmt.Fprintf(&b, "Held back pending review (drift: pin; the reviewed versions are served): %s\n", strings.Join(v.Drift.HeldBack, "; "))
		}
	}
	if p := problemOf(v, time.Now()); p != nil {
		fmt.Fprintf(&b, "Advice: %s.\n", p.Advice)
	}
	if v.status != nil && strings.TrimSpace(v.status.StderrTail) != "" {
		b.WriteString("\nLast stderr lines:\n")
		for _, line := range strings.Split(strings.TrimRight(v.status.StderrTail, "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
