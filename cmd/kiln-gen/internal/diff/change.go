package diff

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Severity says what a change means for existing callers.
type Severity int

// The zero Severity is Breaking so that a Change built without a judgement
// errs on the loud side.
const (
	// Breaking changes can make existing callers fail, or are not analysed
	// and so cannot be ruled out.
	Breaking Severity = iota
	// Compatible changes are visible to callers but keep existing calls working.
	Compatible
	// Cosmetic changes touch only human-readable text (descriptions, titles).
	Cosmetic
	// Info changes describe the backend itself (server or protocol version).
	Info
)

// String returns the label Render prints; Breaking is upper case so that it
// stands out in a review and is easy to grep for in CI logs.
func (s Severity) String() string {
	switch s {
	case Breaking:
		return "BREAKING"
	case Compatible:
		return "compatible"
	case Cosmetic:
		return "cosmetic"
	case Info:
		return "info"
	}
	return "Severity(" + strconv.Itoa(int(s)) + ")"
}

// Subject is the kind of thing a Change is about.
type Subject int

// Subjects, in the order Render lists them within a backend.
const (
	SubjectBackend Subject = iota
	SubjectTool
	SubjectResource
	SubjectTemplate
	SubjectPrompt
)

// String returns the word Render puts before the subject's name.
func (s Subject) String() string {
	switch s {
	case SubjectBackend:
		return "backend"
	case SubjectTool:
		return "tool"
	case SubjectResource:
		return "resource"
	case SubjectTemplate:
		return "resource template"
	case SubjectPrompt:
		return "prompt"
	}
	return "Subject(" + strconv.Itoa(int(s)) + ")"
}

// Kind classifies a Change.
type Kind int

// Kinds of change. Added and Removed apply to every Subject; the schema kinds
// (ParamAdded to Unanalysed) apply to tool input and output schemas, and the
// Param and Required kinds also to prompt arguments.
const (
	Added         Kind = iota // the subject appeared
	Removed                   // the subject disappeared
	Renamed                   // the backend field differs between old and new
	Server                    // server name, version or title
	Protocol                  // negotiated protocol version
	Transport                 // recorded transport
	Instructions              // server instructions text
	Description               // description text
	Title                     // title or display name
	Annotation                // a tool annotation such as destructiveHint
	MIMEType                  // a resource's MIME type
	ParamAdded                // a property (or prompt argument) appeared
	ParamRemoved              // a property (or prompt argument) disappeared
	Required                  // an optional property became required
	Optional                  // a required property became optional
	Type                      // the JSON type set changed
	EnumAdded                 // enum values were added
	EnumRemoved               // enum values were removed
	Additional                // additionalProperties changed
	Constraint                // a validation bound, pattern, format or value list changed
	Default                   // a default value changed
	Keyword                   // a keyword that does not affect validation changed
	Unanalysed                // a schema change this package does not model
	OutputAdded               // the tool started declaring an output schema
	OutputRemoved             // the tool stopped declaring an output schema
	Icons                     // a tool's icons
)

var kindNames = [...]string{
	Added:         "added",
	Removed:       "removed",
	Renamed:       "renamed",
	Server:        "server",
	Protocol:      "protocol",
	Transport:     "transport",
	Instructions:  "instructions",
	Description:   "description",
	Title:         "title",
	Annotation:    "annotation",
	MIMEType:      "mime-type",
	ParamAdded:    "param-added",
	ParamRemoved:  "param-removed",
	Required:      "required",
	Optional:      "optional",
	Type:          "type",
	EnumAdded:     "enum-added",
	EnumRemoved:   "enum-removed",
	Additional:    "additional-properties",
	Constraint:    "constraint",
	Default:       "default",
	Keyword:       "keyword",
	Unanalysed:    "not-analysed",
	OutputAdded:   "output-added",
	OutputRemoved: "output-removed",
	Icons:         "icons",
}

// String returns a stable lower-case name, suitable for machine output.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Change is one difference between two recordings of a backend.
type Change struct {
	Backend string
	Subject Subject
	// Name identifies the subject within the backend: a tool or prompt name,
	// a resource URI or a URI template. It is empty for SubjectBackend.
	Name string
	// Output is true when Path lies in the tool's output schema.
	Output bool
	// Path locates the change inside the subject: a dotted property path
	// with "[]" for array items and "*" for additionalProperties, e.g.
	// "options.limit" or "items[].id"; empty for the subject itself. Prompt
	// arguments use their name.
	Path     string
	Kind     Kind
	Severity Severity
	// Old and New are the values before and after, as text (descriptions
	// verbatim, schema fragments as compact canonical JSON); either may be
	// empty when the change has no single value.
	Old, New string
	// Message describes the change without naming the subject, e.g.
	// `parameter "message" removed`.
	Message string
}

// String is the change as one line, subject included, without severity.
func (c Change) String() string {
	if c.Subject == SubjectBackend {
		return c.Message
	}
	return c.Subject.String() + " " + displayName(c.Name) + ": " + c.Message
}

// HasBreaking reports whether any change is Breaking.
func HasBreaking(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Severity == Breaking })
}

// compare orders on every field so that sorting is total and the output
// depends only on the set of changes, never on how they were found.
func compare(a, b Change) int {
	return cmp.Or(
		strings.Compare(a.Backend, b.Backend),
		cmp.Compare(a.Subject, b.Subject),
		strings.Compare(a.Name, b.Name),
		cmp.Compare(a.Severity, b.Severity),
		boolCompare(a.Output, b.Output),
		strings.Compare(a.Path, b.Path),
		cmp.Compare(a.Kind, b.Kind),
		strings.Compare(a.Message, b.Message),
		strings.Compare(a.Old, b.Old),
		strings.Compare(a.New, b.New),
	)
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// displayName leaves ordinary names bare, as reviewers expect ("tool echo"),
// and quotes the rest so that a name with spaces or control characters
// cannot blur where the name ends or inject terminal escapes into CI logs.
func displayName(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r == '"' || r == '\\' || unicode.IsSpace(r) || !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
