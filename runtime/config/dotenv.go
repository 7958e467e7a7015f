package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// envNameRE is the shape of a variable name in .env files and ${…}.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// lookup resolves variables: kiln's own (StateDirVar) first, then the
// process environment (or the injected Getenv), then the .env file, which
// never overrides what is set.
type lookup struct {
	getenv func(string) (string, bool)
	dotenv map[string]string
	// builtin holds kiln's own variables once they are known; shared by
	// every copy of the lookup.
	builtin map[string]string
}

func (l lookup) get(name string) (string, bool) {
	if isBuiltin(name) {
		v, ok := l.builtin[name]
		return v, ok
	}
	if v, ok := l.getenv(name); ok {
		return v, true
	}
	v, ok := l.dotenv[name]
	return v, ok
}

// readDotEnv reads the .env file at path; a missing file yields no
// variables. Values are taken literally: ${…} expansion belongs to the
// config, where it is recorded in Backend.Vars. Its problems come back
// with the good lines' variables, so the config is still checked and one
// load reports both files' problems.
func readDotEnv(path string) (map[string]string, *problems, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &problems{file: path}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	vars, probs := parseDotEnv(string(data), path)
	return vars, probs, nil
}

// parseDotEnv parses the common .env dialect: KEY=value lines, optional
// "export ", # comments, and single- or double-quoted values on one line
// (double quotes understand \n, \t, \", \\). A later KEY wins, as in a shell.
func parseDotEnv(text, file string) (map[string]string, *problems) {
	vars := map[string]string{}
	ps := &problems{file: file}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !envNameRE.MatchString(key) {
			ps.add(n, "", "want KEY=value with a name of letters, digits and _, not starting with a digit")
			continue
		}
		v, err := dotEnvValue(strings.TrimSpace(val))
		if err != "" {
			ps.add(n, key, "%s", err)
			continue
		}
		vars[key] = v
	}
	return vars, ps
}

// dotEnvValue decodes one value; the error is a message, "" when fine.
func dotEnvValue(s string) (string, string) {
	if s == "" || (s[0] != '"' && s[0] != '\'') {
		// An unquoted value ends at a " #" comment.
		if i := strings.Index(s, " #"); i >= 0 {
			s = s[:i]
		}
		return strings.TrimSpace(s), ""
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			if rest := strings.TrimSpace(s[i+1:]); rest != "" && rest[0] != '#' {
				return "", "unexpected text after the closing quote; quote the whole value"
			}
			return b.String(), ""
		case c == '\\' && q == '"' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "unterminated quote; close it on the same line (values span one line)"
}
