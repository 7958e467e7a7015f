package console

import (
	"cmp"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed assets templates
var files embed.FS

func assetsFS() fs.FS {
	sub, _ := fs.Sub(files, "assets")
	return sub
}

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"since": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"ms":    func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"join":  strings.Join,
}).ParseFS(files, "templates/*.html"))

// page renders the template name inside the layout.
func (c *Console) page(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Page"] = name
	data["Viewer"] = viewerFrom(r.Context())
	data["Replica"] = c.opts.Replica
	data["Workspaces"] = c.workspaceNames(r.Context())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name+".html", data); err != nil {
		c.log.Warn("console page failed", "page", name, "err", err)
	}
}

// backendRow is one line of the overview.
type backendRow struct {
	Name, Transport, State, Since, Error, Drift string
	Tools                                       int
}

// rows reads kiln://backends into the overview's table.
func (c *Console) rows(r *http.Request) []backendRow {
	v, err := c.opts.Source.Resource(r.Context(), "kiln://backends")
	if err != nil {
		return nil
	}
	raw, _ := json.Marshal(v)
	var list []map[string]any
	_ = json.Unmarshal(raw, &list)
	out := make([]backendRow, 0, len(list))
	for _, b := range list {
		row := backendRow{Name: str(b["name"]), Transport: str(b["transport"]), State: str(b["state"]), Since: str(b["since"]), Error: str(b["error"])}
		if n, ok := b["tools"].(float64); ok {
			row.Tools = int(n)
		}
		if d, ok := b["drift"].(map[string]any); ok {
			row.Drift = str(d["summary"])
			if row.Drift == "" {
				row.Drift = "drifted"
			}
		}
		out = append(out, row)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// callsPerMinute counts the tool calls of the last minute in the ring.
func (c *Console) callsPerMinute() int {
	n := 0
	cut := c.opts.Now().Add(-time.Minute)
	for _, e := range c.hub.recent(ringSize) {
		if e.Time.Before(cut) {
			break
		}
		if e.Kind == "call" {
			n++
		}
	}
	return n
}

func (c *Console) pageOverview(w http.ResponseWriter, r *http.Request) {
	health, _ := c.opts.Source.Resource(r.Context(), "kiln://health")
	raw, _ := json.Marshal(health)
	var h struct {
		Status, Summary string
	}
	_ = json.Unmarshal(raw, &h)
	c.page(w, r, http.StatusOK, "overview", map[string]any{"Backends": c.rows(r), "Health": h, "CallsPerMinute": c.callsPerMinute()})
}

func (c *Console) pageBackend(w http.ResponseWriter, r *http.Request) {
	v, err := c.opts.Source.Resource(r.Context(), "kiln://backend/"+r.PathValue("name"))
	if err != nil {
		c.page(w, r, http.StatusNotFound, "missing", map[string]any{"What": "backend " + r.PathValue("name")})
		return
	}
	raw, _ := json.Marshal(v)
	var b struct {
		Backend map[string]any `json:"backend"`
		Tools   []string       `json:"tools"`
		Advice  string         `json:"advice"`
		Stderr  []string       `json:"stderr_tail"`
	}
	_ = json.Unmarshal(raw, &b)
	var facts [][2]string
	for k, val := range b.Backend {
		if k == "name" {
			continue
		}
		s, _ := json.Marshal(val)
		facts = append(facts, [2]string{k, strings.Trim(string(s), `"`)})
	}
	sort.Slice(facts, func(i, j int) bool { return facts[i][0] < facts[j][0] })
	var recent []Event
	for _, e := range c.visibleRecent(r.Context(), ringSize) {
		if (e.Backend == r.PathValue("name") || strings.HasPrefix(e.Tool, r.PathValue("name")+".")) && e.Outcome != "" && e.Outcome != "ok" && len(recent) < 20 {
			recent = append(recent, e)
		}
	}
	lines := b.Stderr
	c.page(w, r, http.StatusOK, "backend", map[string]any{"Name": r.PathValue("name"), "Facts": facts, "Tools": b.Tools,
		"Advice": b.Advice, "Stderr": strings.Join(lines, "\n"), "Errors": recent})
}

func (c *Console) pageSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	data := map[string]any{"Query": q}
	if q != "" {
		data["Hits"] = c.opts.Source.SearchPeople(r.Context(), q, 10)
	}
	c.page(w, r, http.StatusOK, "search", data)
}

func (c *Console) pageLog(w http.ResponseWriter, r *http.Request) {
	c.page(w, r, http.StatusOK, "log", map[string]any{"Events": c.visibleRecent(r.Context(), 100)})
}

func (c *Console) pageWorkspace(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if c.readable(r.Context(), name) == nil {
		c.page(w, r, http.StatusNotFound, "missing", map[string]any{"What": "workspace " + name})
		return
	}
	c.renderWorkspace(w, r, name, nil)
}

func (c *Console) renderWorkspace(w http.ResponseWriter, r *http.Request, name string, exec *execResult) {
	p := cmp.Or(r.URL.Query().Get("path"), ".")
	data := map[string]any{"Name": name, "Path": p, "Exec": exec, "Command": r.PostFormValue("command")}
	ws := c.root(name)
	if rel, entries, err := list(ws, p); err == nil {
		data["Path"], data["Entries"] = rel, entries
		data["Parent"] = parentOf(rel)
	} else if rel, text, cut, binary, ferr := c.readView(ws, p); ferr == nil {
		data["Path"], data["File"], data["Cut"], data["Binary"] = rel, text, cut, binary
		data["Parent"] = parentOf(rel)
	} else {
		data["Error"] = ferr.Error()
	}
	c.page(w, r, http.StatusOK, "workspace", data)
}

func parentOf(rel string) string {
	if rel == "." || rel == "" {
		return ""
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "."
	}
	return rel[:i]
}

// pageExec runs the exec form's command and shows the workspace with its
// output; it works without JavaScript.
func (c *Console) pageExec(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if c.readable(r.Context(), name) == nil {
		c.page(w, r, http.StatusNotFound, "missing", map[string]any{"What": "workspace " + name})
		return
	}
	timeout, _ := strconv.Atoi(r.PostFormValue("timeout"))
	out, err := c.exec(r, name, execRequest{Command: r.PostFormValue("command"), Timeout: timeout})
	if err != nil {
		out = execResult{Output: err.Error(), IsError: true}
	}
	c.renderWorkspace(w, r, name, &out)
}
