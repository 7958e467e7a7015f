package workspace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/textcut"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Read limits, as Claude Code's Read has them.
const (
	readDefaultLimit = 2000
	readLineCut      = 2000
	// readMaxBytes bounds what Read loads at all; larger files are read
	// in ranges with offset and limit.
	readMaxBytes = 64 << 20
	// readFooterRoom is kept free of lines for Read's last line, the
	// offset to continue from.
	readFooterRoom = 160
)

var imageTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
}

func readTool(w *Workspace, _ context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		FilePath string `json:"file_path"`
		Offset   int    `json:"offset"`
		Limit    int    `json:"limit"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Read: %v", err)
	}
	rel, err := w.root.resolveTarget(a.FilePath)
	if err != nil {
		return w.pathErr("Read", a.FilePath, err)
	}
	f, err := w.root.open(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return w.pathErr("Read", a.FilePath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return w.pathErr("Read", a.FilePath, err)
	}
	if fi.IsDir() {
		return toolcall.Errorf("Read: %s is a directory, not a file; list it with Glob (pattern \"*\", path %q) or Bash ls", quotePath(a.FilePath), a.FilePath)
	}
	if !fi.Mode().IsRegular() {
		return toolcall.Errorf("Read: %s is not a regular file (%s); Read only reads files", quotePath(a.FilePath), fi.Mode().Type())
	}
	// At most the size it had when opened: a file a background command
	// keeps appending to would otherwise be read forever.
	br := bufio.NewReaderSize(io.LimitReader(f, max(fi.Size(), readMaxBytes)), 64<<10)
	if mime, ok := imageTypes[strings.ToLower(filepath.Ext(rel))]; ok {
		data, err := io.ReadAll(io.LimitReader(br, readMaxBytes+1))
		if err != nil {
			return w.pathErr("Read", a.FilePath, err)
		}
		if len(data) > readMaxBytes {
			return toolcall.Errorf("Read: image %s is over %d bytes", quotePath(a.FilePath), readMaxBytes)
		}
		block, _ := json.Marshal(map[string]string{"type": "image", "data": base64.StdEncoding.EncodeToString(data), "mimeType": mime})
		return &toolcall.Result{Content: []json.RawMessage{block}}
	}
	head, err := br.Peek(8192)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return w.pathErr("Read", a.FilePath, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return toolcall.Errorf("Read: %s looks binary (it holds NUL bytes); inspect it with Bash (e.g. xxd | head) instead", quotePath(a.FilePath))
	}
	if len(head) == 0 {
		return toolcall.Text("(the file exists and is empty)")
	}
	text, err := numberLines(br, a.Offset, a.Limit, w.room(readFooterRoom))
	if err != nil {
		return w.pathErr("Read", a.FilePath, err)
	}
	return toolcall.Text(text)
}

// numberLines renders lines offset.. (1-based) of r cat -n style, cutting
// long lines, as many whole lines as fit budget bytes. It reads r to its
// end, to count the lines after the window, but keeps only the window: a
// file is not loaded whole, so offset reaches lines past any size limit.
// When lines remain, the last line names the offset of the first one not
// shown.
func numberLines(r *bufio.Reader, offset, limit, budget int) (string, error) {
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = readDefaultLimit
	}
	end := offset - 1 + min(limit, math.MaxInt-offset) // the last line wanted
	var (
		b       strings.Builder
		n       int    // complete lines read
		lineLen int    // bytes of line n+1 read so far
		cur     []byte // its first readLineCut+1 bytes, in the window
		over    bool   // it has more than line ends past readLineCut
		full    bool   // the budget ended the window
	)
	for {
		chunk, err := r.ReadSlice('\n')
		if n >= offset-1 && n < end {
			if lineLen <= readLineCut {
				cur = append(cur, chunk[:min(len(chunk), readLineCut+1-lineLen)]...)
			}
			for _, c := range chunk[min(len(chunk), max(0, readLineCut-lineLen)):] {
				over = over || (c != '\r' && c != '\n')
			}
		}
		lineLen += len(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return "", err
		}
		if lineLen > 0 {
			if n >= offset-1 && n < end {
				line := renderLine(n+1, cur, over)
				switch {
				case b.Len()+len(line) <= budget:
					b.WriteString(line)
				case b.Len() == 0:
					// One line longer than the whole budget.
					b.WriteString(textcut.Prefix(line, budget) + "… [line cut]\n")
				default:
					end, full = n, true
				}
			}
			n++
			lineLen, cur, over = 0, cur[:0], false
		}
		if err == io.EOF {
			break
		}
	}
	if offset > n {
		return fmt.Sprintf("(the file has %d lines; offset %d is past its end)", n, offset), nil
	}
	if end < n {
		if full {
			fmt.Fprintf(&b, "(lines %d-%d of %d: as many as fit the %d-byte output budget; continue with offset %d)\n", offset, end, n, budget, end+1)
		} else {
			fmt.Fprintf(&b, "(%d more lines; continue with offset %d)\n", n-end, end+1)
		}
	}
	return b.String(), nil
}

// renderLine is line i as Read shows it; line holds its first
// readLineCut+1 bytes and over says whether more than line ends came
// after them.
func renderLine(i int, line []byte, over bool) string {
	if over {
		return fmt.Sprintf("%6d\t%s… [line cut]\n", i, textcut.Prefix(string(line), readLineCut))
	}
	return fmt.Sprintf("%6d\t%s\n", i, bytes.TrimRight(line[:min(len(line), readLineCut)], "\r\n"))
}

func writeTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		FilePath string  `json:"file_path"`
		Content  *string `json:"content"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Write: %v", err)
	}
	if a.Content == nil {
		return toolcall.Errorf("Write: content is missing; give the file's full new text (an empty string for an empty file)")
	}
	rel, err := w.root.resolveTarget(a.FilePath)
	if err != nil {
		return w.pathErr("Write", a.FilePath, err)
	}
	w.writeMu.Lock()
	created, err := w.root.writeFile(rel, []byte(*a.Content))
	w.writeMu.Unlock()
	if err != nil {
		return w.pathErr("Write", a.FilePath, err)
	}
	verb := "Updated"
	if created {
		verb = "Created"
	}
	msg := fmt.Sprintf("%s %s (%d bytes)", verb, w.display(rel), len(*a.Content))
	return toolcall.Text(msg + w.feedback(ctx, rel))
}

type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a editArgs
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Edit: %v", err)
	}
	if a.OldString == a.NewString {
		return toolcall.Errorf("Edit: old_string and new_string are the same; nothing to change")
	}
	rel, err := w.root.resolveTarget(a.FilePath)
	if err != nil {
		return w.pathErr("Edit", a.FilePath, err)
	}
	msg, fail := w.edit(rel, a)
	if fail != nil {
		return fail
	}
	return toolcall.Text(msg + w.feedback(ctx, rel))
}

// edit reads, changes and replaces rel under writeMu: Edits of one file
// side by side (Promise.all in a program) each renamed their copy over
// it, and all but the last were lost.
func (w *Workspace) edit(rel string, a editArgs) (string, *toolcall.Result) {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	f, err := w.root.open(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && a.OldString == "" {
			if _, err := w.root.writeFile(rel, []byte(a.NewString)); err != nil {
				return "", w.pathErr("Edit", a.FilePath, err)
			}
			return fmt.Sprintf("Created %s", w.display(rel)), nil
		}
		return "", w.pathErr("Edit", a.FilePath, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return "", toolcall.Errorf("Edit: %s is not a regular file", quotePath(a.FilePath))
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxBytes+1))
	f.Close()
	if err != nil {
		return "", w.pathErr("Edit", a.FilePath, err)
	}
	if len(data) > readMaxBytes {
		// Only the first readMaxBytes were read: writing the edit back
		// would cut the file there.
		return "", toolcall.Errorf("Edit: %s is over %d MiB, more than Edit loads; change it with Bash (e.g. sed -i) instead", quotePath(a.FilePath), readMaxBytes>>20)
	}
	text := string(data)
	if a.OldString == "" {
		return "", toolcall.Errorf("Edit: old_string is empty but %s exists; give the exact text to replace, or use Write to replace the whole file", quotePath(a.FilePath))
	}
	plan, err := planEdit(text, a.OldString, a.NewString)
	if err != nil {
		return "", toolcall.Errorf("Edit: %v", err)
	}
	n := plan.count
	switch {
	case n == 0:
		return "", toolcall.Errorf("Edit: old_string was not found in %s (0 matches); Read the file and copy the text exactly, including whitespace and indentation", quotePath(a.FilePath))
	case n > 1 && !a.ReplaceAll:
		return "", toolcall.Errorf("Edit: old_string matches %d places in %s; add surrounding lines to make it unique, or set replace_all: true to change all %d", n, quotePath(a.FilePath), n)
	}
	text = plan.apply(a.ReplaceAll)
	if _, err := w.root.writeFile(rel, []byte(text)); err != nil {
		return "", w.pathErr("Edit", a.FilePath, err)
	}
	return fmt.Sprintf("Edited %s: replaced %d occurrence(s)%s", w.display(rel), max(1, n*btoi(a.ReplaceAll)), plan.how), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mkdirAll creates the folders of rel beneath the root.
func (r *Root) mkdirAll(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i := range parts {
		parent := filepath.Join(parts[:i]...)
		if parent == "" {
			parent = "."
		}
		dfd, err := r.openBeneath(parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(dfd, parts[i], 0o755)
		unix.Close(dfd)
		if err != nil && err != unix.EEXIST {
			return err
		}
	}
	return nil
}

// writeFile replaces rel atomically: the text goes to a temporary file in
// the same folder, opened beneath the root, which is then renamed over
// the old one. A symlink at rel is replaced, not written through: callers
// pass rel with the links inside the root resolved (resolveTarget), so
// only one swapped in since is.
func (r *Root) writeFile(rel string, data []byte) (created bool, err error) {
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	if rel == "." {
		return false, errors.New("is the workspace root, a folder")
	}
	if err := r.mkdirAll(dir); err != nil {
		return false, err
	}
	dfd, err := r.openBeneath(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(dfd)
	mode := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return false, errors.New("is a directory; give a file path")
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
		mode = st.Mode & 0o7777
	case err == unix.ENOENT:
		created = true
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".kiln-" + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, base)
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return false, werr
	}
	return created, nil
}
