package console

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// maxFileView bounds a file shown in the console or /file; larger ones
// are cut and say so (download has them whole).
const maxFileView = 1 << 20

// entry is one item of a folder listing.
type entry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir,omitempty"`
	Link bool   `json:"symlink,omitempty"`
	Size int64  `json:"size"`
}

func (c *Console) rootOf(w http.ResponseWriter, r *http.Request) *workspace.Root {
	// A workspace the identity may not read does not exist for it.
	root := c.readable(r.Context(), r.PathValue("name"))
	if root == nil {
		httpError(w, r, http.StatusNotFound, "no workspace "+r.PathValue("name")+": GET /api/v1/workspaces lists them")
	}
	return root
}

// list reads the folder p of root, folders first.
func list(root *workspace.Root, p string) (string, []entry, error) {
	f, rel, err := root.OpenRead(p)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return rel, nil, err
	}
	out := make([]entry, 0, len(des))
	for _, d := range des {
		e := entry{Name: d.Name(), Dir: d.IsDir(), Link: d.Type()&fs.ModeSymlink != 0}
		if info, err := d.Info(); err == nil && !e.Dir {
			e.Size = info.Size()
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir
		}
		return out[i].Name < out[j].Name
	})
	return rel, out, nil
}

func (c *Console) apiTree(w http.ResponseWriter, r *http.Request) {
	root := c.rootOf(w, r)
	if root == nil {
		return
	}
	rel, entries, err := list(root, cmp.Or(r.URL.Query().Get("path"), "."))
	if err != nil {
		httpError(w, r, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, map[string]any{"workspace": r.PathValue("name"), "path": rel, "entries": entries})
}

// readView reads up to maxFileView bytes of p, scrubbed as a tool's output
// is; binary reports a file that is not UTF-8 text.
func (c *Console) readView(root *workspace.Root, p string) (rel, text string, cut, binary bool, err error) {
	f, rel, err := root.OpenRead(p)
	if err != nil {
		return "", "", false, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return rel, "", false, false, err
	case st.IsDir():
		return rel, "", false, false, errors.New("a folder; list it with tree")
	case !st.Mode().IsRegular():
		// A FIFO or device would block the read forever.
		return rel, "", false, false, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileView+1))
	if err != nil {
		return rel, "", false, false, err
	}
	if len(b) > maxFileView {
		b, cut = b[:maxFileView], true
	}
	if !utf8.Valid(b) && !cut {
		return rel, "", false, true, nil
	}
	text = strings.ToValidUTF8(string(b), "\uFFFD")
	if c.opts.ScrubText != nil {
		text = c.opts.ScrubText(text)
	}
	return rel, text, cut, false, nil
}

func (c *Console) apiFile(w http.ResponseWriter, r *http.Request) {
	root := c.rootOf(w, r)
	if root == nil {
		return
	}
	_, text, cut, binary, err := c.readView(root, r.URL.Query().Get("path"))
	switch {
	case err != nil:
		httpError(w, r, http.StatusNotFound, err.Error())
	case binary:
		httpError(w, r, http.StatusUnsupportedMediaType, "not UTF-8 text; download the workspace to get it")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cut {
			w.Header().Set("X-Kiln-Truncated", "true")
		}
		io.WriteString(w, text)
	}
}

// maxScrubbed is the largest text file download scrubs (read whole to do
// so); a larger one is left out and named in MISSING.txt.
const maxScrubbed = 16 << 20

// apiDownload streams the workspace as a tar.gz: regular files and folders
// read beneath the root, text scrubbed as the file view is, symlinks left
// out (their targets may be anywhere), .git only with ?git=1. Files that
// cannot be read whole (gone, refused, too large a text) are left out and
// listed in MISSING.txt at the archive's root; a write that fails ends the
// response as an error, never as a short archive that looks whole.
func (c *Console) apiDownload(w http.ResponseWriter, r *http.Request) {
	root := c.rootOf(w, r)
	if root == nil {
		return
	}
	withGit := r.URL.Query().Get("git") == "1"
	name := r.PathValue("name")
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.tar.gz"`)
	if r.Method == http.MethodHead {
		return
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	var missing []string
	fatal := func(err error) {
		c.log.Warn("console download aborted", "workspace", name, "err", err)
		panic(http.ErrAbortHandler)
	}
	var walk func(dir string)
	walk = func(dir string) {
		_, entries, err := list(root, dir)
		if err != nil {
			missing = append(missing, strings.TrimPrefix(dir, "./")+"/ ("+err.Error()+")")
			return
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name)
			switch {
			case e.Link, e.Name == ".git" && !withGit:
				continue
			case e.Dir:
				if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "./") + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
					fatal(err)
				}
				walk(p)
			default:
				body, mode, why := c.downloadable(root, p)
				if why != "" {
					missing = append(missing, strings.TrimPrefix(p, "./")+" ("+why+")")
					continue
				}
				if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "./"), Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
					fatal(err)
				}
				if _, err := tw.Write(body); err != nil {
					fatal(err)
				}
			}
		}
	}
	walk(".")
	if len(missing) > 0 {
		note := []byte("Left out of this download:\n" + strings.Join(missing, "\n") + "\n")
		if err := tw.WriteHeader(&tar.Header{Name: "MISSING.txt", Mode: 0o644, Size: int64(len(note)), Typeflag: tar.TypeReg}); err != nil {
			fatal(err)
		}
		if _, err := tw.Write(note); err != nil {
			fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		fatal(err)
	}
	if err := gz.Close(); err != nil {
		fatal(err)
	}
}

// downloadable reads p whole for the archive: text scrubbed, anything
// else as it is; why says why it is left out.
func (c *Console) downloadable(root *workspace.Root, p string) (body []byte, mode int64, why string) {
	f, _, err := root.OpenRead(p)
	if err != nil {
		return nil, 0, err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, 0, err.Error()
	case !st.Mode().IsRegular():
		return nil, 0, "not a regular file"
	case st.Size() > maxScrubbed:
		return nil, 0, "larger than 16 MiB; copy it with the workspace's own tools"
	}
	body, err = io.ReadAll(io.LimitReader(f, maxScrubbed+1))
	switch {
	case err != nil:
		return nil, 0, err.Error()
	case len(body) > maxScrubbed:
		return nil, 0, "grew past 16 MiB while read"
	}
	if utf8.Valid(body) && c.opts.ScrubText != nil {
		body = []byte(c.opts.ScrubText(string(body)))
	}
	return body, int64(st.Mode().Perm()), ""
}

// execRequest is a person's command.
type execRequest struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// execResult is what the command did, as the agent's Bash would say it.
type execResult struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// exec runs command as the workspace's Bash tool through the gateway's
// Caller: the same confinement, timeout (exit 124), scrubbing, policy and
// audit line as an agent's call; the event names who ran it.
func (c *Console) exec(r *http.Request, name string, req execRequest) (execResult, error) {
	if strings.TrimSpace(req.Command) == "" {
		return execResult{}, errors.New("command: give a command to run")
	}
	args := map[string]any{"command": req.Command, "description": "run from the kiln console"}
	if req.Timeout > 0 {
		args["timeout"] = req.Timeout
	}
	raw, _ := json.Marshal(args)
	res, err := c.opts.Caller.CallTool(r.Context(), name, "Bash", raw)
	if err != nil {
		res = toolcall.Errorf("%v", err)
	}
	if c.opts.Scrub != nil {
		res = c.opts.Scrub(res)
	}
	c.Publish(Event{Kind: "exec", Backend: name, Tool: name + ".Bash", Who: viewerFrom(r.Context()).Name, Outcome: outcomeOf(res)})
	return execResult{Output: res.TextContent(), IsError: res.IsError}, nil
}

func outcomeOf(res *toolcall.Result) string {
	if res.IsError {
		return "isError"
	}
	return "ok"
}

func (c *Console) apiExec(w http.ResponseWriter, r *http.Request) {
	if c.readable(r.Context(), r.PathValue("name")) == nil {
		httpError(w, r, http.StatusNotFound, "no workspace "+r.PathValue("name"))
		return
	}
	var req execRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		httpError(w, r, http.StatusBadRequest, `body: want JSON {"command": "...", "timeout": ms}`)
		return
	}
	out, err := c.exec(r, r.PathValue("name"), req)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, out)
}
