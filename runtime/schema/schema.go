package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// regexTimeout bounds one pattern match: a backtracking pattern published
// by a backend must not stall the gateway.
const regexTimeout = 100 * time.Millisecond

// ErrInvalidArgs is wrapped by every *ArgsError.
var ErrInvalidArgs = errors.New("invalid arguments")

// Problem is one way the arguments break the schema.
type Problem struct {
	// Path is a JSON pointer into the arguments ("" is the whole object).
	Path string
	// Message says what was expected and what was given.
	Message string
}

// ArgsError lists every problem found, so a model can fix them in one go.
type ArgsError struct {
	Problems []Problem
}

func (e *ArgsError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments:")
	for _, p := range e.Problems {
		where := p.Path
		if where == "" {
			where = "(arguments)"
		}
		fmt.Fprintf(&b, "\n  - %s: %s", where, p.Message)
	}
	return b.String()
}

// Unwrap lets callers test errors.Is(err, ErrInvalidArgs).
func (e *ArgsError) Unwrap() error { return ErrInvalidArgs }

// Validator compiles each schema once and caches it by key. It is safe for
// concurrent use.
type Validator struct {
	mu    sync.Mutex
	cache map[string]*entry
}

type entry struct {
	src    []byte // the schema compiled, so a changed one is compiled anew
	once   sync.Once
	schema *jsonschema.Schema
	quick  *quick // nil when the schema uses a keyword quick does not judge
	err    error
}

// New returns an empty validator.
func New() *Validator { return &Validator{cache: map[string]*entry{}} }

// Compile compiles and caches the schema under key (a tool ID). A schema
// that does not compile is reported once and then skipped by Validate: the
// backend still validates its own input, and kiln must not refuse every
// call because of a keyword it does not understand.
func (v *Validator) Compile(key string, schema json.RawMessage) error {
	return v.compiled(key, schema).err
}

func (v *Validator) compiled(key string, schema json.RawMessage) *entry {
	e := v.entry(key, schema)
	e.once.Do(func() { e.schema, e.quick, e.err = compile(key, schema) })
	return e
}

// entry returns key's cache entry for schema: a tool whose schema changed
// (a backend's live tools served under drift: warn or follow, a runtime
// backend registered again) gets a new entry, so calls are validated
// against the schema kiln serves, not the first one it saw.
func (v *Validator) entry(key string, schema json.RawMessage) *entry {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.cache[key]
	if !ok || !bytes.Equal(e.src, schema) {
		e = &entry{src: bytes.Clone(schema)}
		v.cache[key] = e
	}
	return e
}

// Validate checks args against the schema cached under key, compiling it
// first if needed. It returns an *ArgsError for bad arguments, a plain
// error when args is not JSON, and nil when the schema could not be
// compiled (see Compile).
func (v *Validator) Validate(key string, schema, args json.RawMessage) error {
	e := v.compiled(key, schema)
	if e.err != nil {
		return nil
	}
	sch := e.schema
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if e.quick != nil && e.quick.valid(args) {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgsError{Problems: []Problem{{Message: "arguments are not valid JSON: " + err.Error()}}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &ArgsError{Problems: []Problem{{Message: fmt.Sprintf("expected an object of named arguments, got %s", describe(inst))}}}
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &ArgsError{Problems: problems(ve)}
	}
	return err
}

func compile(key string, schema json.RawMessage) (*jsonschema.Schema, *quick, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, nil, fmt.Errorf("schema for %s is not valid JSON: %w", key, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(ecmaRegexp)
	url := "kiln:///" + key + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, fmt.Errorf("schema for %s: %w", key, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("schema for %s does not compile: %w", key, err)
	}
	return sch, quickCompile(doc), nil
}

// noLoader refuses every external $ref: the default loader reads file://
// URLs, which let a hostile schema leak a local file through an error.
type noLoader struct{}

// ErrRefBlocked is returned for any $ref outside the schema itself.
var ErrRefBlocked = errors.New("external $ref loading is disabled")

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w (%s)", ErrRefBlocked, url)
}

type ecma struct{ re *regexp2.Regexp }

func (e ecma) MatchString(s string) bool {
	ok, err := e.re.MatchString(s)
	return ok && err == nil
}
func (e ecma) String() string { return e.re.String() }

func ecmaRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = regexTimeout
	return ecma{re}, nil
}

var printer = message.NewPrinter(language.English)

// problems flattens the validation tree into leaf messages, which are the
// ones that name a concrete argument.
func problems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := Problem{Path: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)}
			if k := p.Path + "\x00" + p.Message; !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
