package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Parse decodes one spec document, applies Defaults and validates it. Every problem is in
// the returned *ConfigError: malformed JSON and unknown fields as well as invalid values.
func Parse(data []byte) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, &ConfigError{Problems: []Problem{decodeProblem(err)}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &ConfigError{Problems: []Problem{{Field: "(document)", Reason: "text after the JSON object"}}}
	}
	s.Defaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func decodeProblem(err error) Problem {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return Problem{Field: te.Field, Reason: fmt.Sprintf("%s: want a JSON %s", te.Value, te.Type)}
	case errors.As(err, &se):
		return Problem{Field: "(document)", Reason: fmt.Sprintf("not JSON at byte %d: %v", se.Offset, err)}
	}
	msg := err.Error()
	const unknown = "json: unknown field "
	if len(msg) > len(unknown) && msg[:len(unknown)] == unknown {
		return Problem{Field: trimQuotes(msg[len(unknown):]), Reason: "unknown field"}
	}
	return Problem{Field: "(document)", Reason: msg}
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
