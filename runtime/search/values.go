package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kinds is a set of kinds of literal values: the paths a task names
// ("/root/notes/x.md", "/root/music") and the ones a tool's parameters
// take. URLs, e-mail addresses and dates are not kinds: a step implied by
// one did not help (DefaultConfig), so they are only told from paths.
type Kinds uint8

// The value kinds.
const (
	KindFile Kinds = 1 << iota // a path or name of a file: "/root/a.wav", "docs/x.md", "r.pdf"
	KindDir                    // a directory path: "/root/music", "~/code"
	numKinds = iota
)

// KindPath is either kind of path.
const KindPath = KindFile | KindDir

// scanValues returns the kinds of the paths in text, and calls
// ext, when not nil, with the lower-cased extension of each file it names.
// It reads space-separated words with their surrounding punctuation
// trimmed, so it allocates nothing for ASCII text. What is not a path:
// "and/or", "24/7", "1/2", "vercel/ai" (a slash alone makes no path: a
// relative path needs a file extension at its end, or to start with "./",
// "../" or "~/"), "Node.js" or "e.g" (a name needs an extension of
// fileTypes, and a capitalised ".js" names a library).
func scanValues(text string, ext func(string)) Kinds {
	var k Kinds
	for w, ok := nextWord(text, 0); ok; w, ok = nextWord(text, w[1]) {
		k |= valueKind(trimValue(text[w[0]:w[1]]), ext)
	}
	return k
}

// trimValue strips the quotes, brackets and sentence punctuation around a
// word: "(see /root/a.md)." is "/root/a.md".
func trimValue(t string) string {
	t = strings.TrimLeft(t, "\"'`([{<“‘")
	return strings.TrimRight(t, "\"'`)]}>.,;:!?”’")
}

// valueKind classifies one trimmed word. A URL ("https://x/a.pdf",
// "www.example.com") or an e-mail address ("ada@example.md") is no path,
// whatever it ends in.
func valueKind(t string, ext func(string)) Kinds {
	if t == "" || strings.Contains(t, "://") || strings.IndexByte(t, '@') >= 0 ||
		len(t) > 4 && strings.EqualFold(t[:4], "www.") {
		return 0
	}
	return pathKind(t, ext)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}

// lowerASCII appends s to dst with ASCII letters lower-cased: a map
// lookup of string(lowerASCII(buf[:0], w)) allocates nothing, where
// lowerWord allocates for every capitalised word of a task.
func lowerASCII(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// pathKind classifies a word that may be a path or a file name.
func pathKind(t string, ext func(string)) Kinds {
	rooted := t[0] == '/' || strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "./") ||
		strings.HasPrefix(t, "../") || len(t) > 2 && t[1] == ':' && (t[2] == '\\' || t[2] == '/') && isAlnum(t[0])
	letter := false
	for _, r := range t {
		switch {
		case r == '/' || r == '\\' || r == '.' || r == '-' || r == '_' || r == '~' || r == ':':
		case r < utf8.RuneSelf && isAlnum(byte(r)):
			letter = letter || r > '9'
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsNumber(r)):
			letter = true
		default:
			return 0 // "a+b", "=", base64: not a path
		}
	}
	if !letter {
		return 0
	}
	base := t[strings.LastIndexAny(t, "/\\")+1:]
	e := extension(base)
	switch {
	case rooted && e != "":
	case rooted:
		return KindDir
	case fileTypes[e] == "" || e == "js" && base[0] >= 'A' && base[0] <= 'Z':
		// "and/or", "vercel/ai", "e.g", and libraries named like a
		// script ("Node.js", "Next.js"): no path
		return 0
	}
	if ext != nil {
		ext(e)
	}
	return KindFile
}

// extension returns the lower-cased extension of a file name: one to five
// letters and digits, at least one a letter, after a dot that follows a
// name. "9.5g" and "v1.2" have none.
func extension(base string) string {
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 || dot == len(base)-1 || len(base)-dot-1 > 5 {
		return ""
	}
	e := base[dot+1:]
	letter := false
	for i := 0; i < len(e); i++ {
		if !isAlnum(e[i]) {
			return ""
		}
		letter = letter || e[i] > '9'
	}
	if !letter {
		return ""
	}
	return lowerWord(e)
}

// fileTypes gives the common file extensions the words of what the file
// holds, in the words tools describe it with: general knowledge of file
// types, not of any tool set. A task's "/root/q3.xlsx" asks for a tool of
// Excel spreadsheets although it never says so.
var fileTypes = map[string]string{
	"pdf": "pdf", "doc": "word document", "docx": "word document", "odt": "document", "rtf": "document",
	"xls": "excel spreadsheet", "xlsx": "excel spreadsheet", "ods": "spreadsheet", "csv": "csv table",
	"tsv": "table", "ppt": "powerpoint presentation", "pptx": "powerpoint presentation", "odp": "presentation",
	"png": "image", "jpg": "image", "jpeg": "image", "gif": "image", "webp": "image", "bmp": "image",
	"svg": "svg image", "tif": "image", "tiff": "image", "heic": "image", "ico": "icon image",
	"wav": "audio", "mp3": "audio", "flac": "audio", "ogg": "audio", "m4a": "audio", "aac": "audio",
	"mp4": "video", "mov": "video", "avi": "video", "mkv": "video", "webm": "video",
	"md": "markdown", "markdown": "markdown", "txt": "text", "log": "log text", "rst": "text",
	"json": "json", "yaml": "yaml", "yml": "yaml", "toml": "toml", "xml": "xml", "ini": "config",
	"html": "html web page", "htm": "html web page", "css": "css",
	"py": "python", "ipynb": "jupyter notebook", "js": "javascript", "ts": "typescript", "tsx": "typescript",
	"go": "go", "rs": "rust", "java": "java", "c": "c", "cpp": "c++", "h": "c", "rb": "ruby", "php": "php",
	"sh": "shell script", "sql": "sql", "db": "database", "sqlite": "sqlite database",
	"zip": "zip archive", "tar": "archive", "gz": "archive", "tgz": "archive", "7z": "archive", "rar": "archive",
	"epub": "ebook", "bib": "bibtex", "tex": "latex", "ics": "calendar", "eml": "email", "vcf": "contact",
}

// paramKinds returns the value kinds a parameter takes, from the words of
// its name ("file_path", "outputDir", "image_paths"). A parameter whose
// type is a boolean, number or object takes none ("isFile"), nor one whose
// name ends in a word describing a property of the value rather than the
// value ("file_type", "path_pattern").
func paramKinds(name, typ string) Kinds {
	switch typ {
	case "boolean", "integer", "number", "object", "null":
		return 0
	}
	var words []string
	tk := tokenizer{cfg: &paramWordConfig}
	tk.each(name, func(b []byte) { words = append(words, string(b)) })
	if len(words) == 0 || notValueWords[words[len(words)-1]] {
		return 0
	}
	var k Kinds
	for _, w := range words {
		k |= paramWords[w]
	}
	return k
}

// paramWordConfig splits parameter names into words as the index does,
// unstemmed.
var paramWordConfig = Config{AcronymPlural: true, SplitDigitUpper: true}

// paramWords are the words of parameter names that say the value kind.
var paramWords = map[string]Kinds{
	"path": KindPath, "paths": KindPath, "filepath": KindPath, "filepaths": KindPath,
	"file": KindFile, "files": KindFile, "filename": KindFile, "filenames": KindFile,
	"dir": KindDir, "dirs": KindDir, "directory": KindDir, "directories": KindDir,
	"folder": KindDir, "folders": KindDir,
}

// notValueWords end parameter names about a value rather than holding
// one: "file_type", "url_count", "path_pattern".
var notValueWords = map[string]bool{
	"type": true, "types": true, "format": true, "formats": true, "size": true, "count": true,
	"encoding": true, "pattern": true, "glob": true, "mode": true, "id": true, "ids": true,
	"extension": true, "length": true, "limit": true,
}
