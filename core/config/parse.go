package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Parse decodes one spec document, applies Defaults and validates it. Every problem is in
// the returned *ConfigError at once (docs/spec.md): malformed JSON, unknown fields (each
// with the nearest known field suggested), values of the wrong JSON type and invalid
// values, each named by its qualified path ("source.captureInstance",
// "options.snapshotKeys[2]"). A field whose value could not be decoded is not also
// reported by Validate. Field names match case-insensitively, as encoding/json matches
// them; a field given twice is a problem (JSON leaves which one counts to the reader).
func Parse(data []byte) (*Spec, error) {
	var s Spec
	var ps problems
	top, ok := parseDocument(&ps, data)
	if !ok {
		return nil, &ConfigError{Problems: ps}
	}
	given := map[string]bool{}
	decodeValue(&ps, given, "", top, reflect.ValueOf(&s).Elem())
	// A zero written in the spec is not "unset": numPartitions 0 would become the
	// default in silence, while maxCommitsPerBatch 0 is an error.
	if given["options.numPartitions"] && s.Options.NumPartitions == 0 && !coveredBy(ps, "options.numPartitions") {
		ps.add("options.numPartitions", "0: want an integer >= 1 (leave it out for the default, %d)", DefaultNumPartitions)
	}
	undecoded := len(ps)
	s.Defaults()
	var ce *ConfigError
	if err := s.Validate(); errors.As(err, &ce) {
		for _, p := range ce.Problems {
			if !coveredBy(ps[:undecoded], p.Field) {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) > 0 {
		return nil, &ConfigError{Problems: ps}
	}
	return &s, nil
}

// parseDocument checks that data is exactly one JSON object (a syntax error is reported
// with its line and column) and returns it.
func parseDocument(ps *problems, data []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset counts the bytes read, the offending one included.
			line, col := lineCol(data, se.Offset-1)
			ps.add("(document)", "not JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			ps.add("(document)", "empty or cut short: want one JSON object (docs/spec.md)")
		default:
			ps.add("(document)", "%v", err)
		}
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := lineCol(data, dec.InputOffset())
		ps.add("(document)", "text after the JSON object at line %d, column %d", line, col)
		return nil, false
	}
	if jsonKind(top) != "an object" {
		ps.add("(document)", "got %s, want a JSON object (docs/spec.md)", jsonKind(top))
		return nil, false
	}
	return top, true
}

// lineCol is the 1-based line and column of byte offset off in data.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// coveredBy reports whether field is, or lies inside, a field already reported.
func coveredBy(reported []Problem, field string) bool {
	for _, p := range reported {
		if field == p.Field || strings.HasPrefix(field, p.Field+".") || strings.HasPrefix(field, p.Field+"[") {
			return true
		}
	}
	return false
}

// decodeValue decodes raw into v, adding a problem at path for every field that is
// unknown, given twice, or of the wrong JSON type, and going on with the rest. given
// collects the paths of the fields the document sets.
func decodeValue(ps *problems, given map[string]bool, path string, raw json.RawMessage, v reflect.Value) {
	if jsonKind(raw) == "null" {
		return // as encoding/json: null leaves the field unset
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer && (t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Slice) {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		v, t = v.Elem(), t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		decodeObject(ps, given, path, raw, v)
	case reflect.Slice:
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			ps.add(path, "got %s, want %s", jsonKind(raw), typeWant(t))
			return
		}
		out := reflect.MakeSlice(t, len(elems), len(elems))
		for i, e := range elems {
			decodeValue(ps, given, fmt.Sprintf("%s[%d]", path, i), e, out.Index(i))
		}
		v.Set(out)
	default:
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			ps.add(path, "%s", typeProblem(path, raw, t))
		}
	}
}

// decodeObject decodes a JSON object into the struct v, field by field.
func decodeObject(ps *problems, given map[string]bool, path string, raw json.RawMessage, v reflect.Value) {
	members, ok := objectMembers(raw)
	if !ok {
		ps.add(path, "got %s, want a JSON object", jsonKind(raw))
		return
	}
	fields := jsonFields(v.Type())
	seen := map[int]string{}
	for _, m := range members {
		i, ok := matchField(fields, m.key)
		if !ok {
			ps.add(join(path, m.key), "unknown field%s", suggest(path, m.key, fields))
			continue
		}
		name := join(path, fields[i].name)
		if first, dup := seen[i]; dup {
			ps.add(name, "given twice (as %q and %q): keep one", first, m.key)
			continue
		}
		seen[i] = m.key
		if jsonKind(m.value) != "null" {
			given[name] = true
		}
		decodeValue(ps, given, name, m.value, v.Field(fields[i].index))
	}
}

type member struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members in document order, duplicates kept.
func objectMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var m member
		m.key, _ = tok.(string)
		if err := dec.Decode(&m.value); err != nil {
			return nil, false
		}
		ms = append(ms, m)
	}
	return ms, true
}

type jsonField struct {
	name  string // the JSON name, as the spec documents it
	index int    // the struct field's index
}

// jsonFields are the JSON-named fields of struct type t.
func jsonFields(t reflect.Type) []jsonField {
	var fs []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs = append(fs, jsonField{name: name, index: i})
	}
	return fs
}

// matchField finds key among fields: exactly first, then ignoring case (encoding/json's
// rule).
func matchField(fields []jsonField, key string) (int, bool) {
	for i, f := range fields {
		if f.name == key {
			return i, true
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.name, key) {
			return i, true
		}
	}
	return 0, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// suggest names the known field an unknown key most likely meant: a sibling whose name
// differs only in case, '_' and '-', or by at most a third of its letters; else a field
// of that name elsewhere in the spec ("captureInstance" at the top is
// source.captureInstance). "" when nothing is close.
func suggest(path, key string, siblings []jsonField) string {
	k := fold(key)
	best, bestD := "", -1
	for _, f := range siblings {
		d := editDistance(k, fold(f.name))
		if d <= max(1, len(k)/3) && (bestD < 0 || d < bestD) {
			best, bestD = f.name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %s?", join(path, best))
	}
	for _, p := range specFieldPaths() {
		if fold(p[strings.LastIndexByte(p, '.')+1:]) == k && !strings.EqualFold(p, join(path, key)) {
			return fmt.Sprintf("; did you mean %s?", p)
		}
	}
	return " (docs/spec.md lists the fields)"
}

// fold lower-cases s and drops '_' and '-', so that max_seconds, maxSeconds and
// max-seconds compare equal.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// specFieldPaths are the qualified JSON paths of every field of Spec.
func specFieldPaths() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range jsonFields(t) {
			p := join(prefix, f.name)
			out = append(out, p)
			ft := t.Field(f.index).Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(p, ft)
			}
		}
	}
	walk("", reflect.TypeFor[Spec]())
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// jsonKind names the JSON type of a value: "a string", "a number", "an object", ...
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// typeProblem says what was wrong with a scalar value: the JSON type given and the one
// wanted. A number is quoted (an integer field given 4.5, a number out of range), except
// under source, whose values are never echoed (docs/spec.md: no error carries a DSN).
func typeProblem(path string, raw json.RawMessage, t reflect.Type) string {
	got := jsonKind(raw)
	if got == "a number" && !strings.HasPrefix(path, "source.") {
		got = string(bytes.TrimSpace(raw))
		if len(got) > 40 {
			got = got[:40] + "..."
		}
		return fmt.Sprintf("%s: want %s", got, typeWant(t))
	}
	return fmt.Sprintf("got %s, want %s", got, typeWant(t))
}

// JSONTypeWant describes the JSON a Go field type takes ("a number", "an array of
// strings", "true or false"), as a spec problem says it; the handlers' event errors say
// it the same way (functions/lambdaerr.EventDecodeReason).
func JSONTypeWant(t reflect.Type) string { return typeWant(t) }

// typeWant describes the JSON a Go field type takes.
func typeWant(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeWant(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct:
		return "a JSON object"
	}
	return t.String()
}
