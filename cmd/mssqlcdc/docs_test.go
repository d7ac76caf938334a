package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// docs/handlers.md lists, under "Local-only errors", the names the CLI itself reports
// (functions/lambdaerr's tests check the handlers' names against the same document).
func TestHandlersDocListsLocalErrorNames(t *testing.T) {
	data, err := os.ReadFile("../../docs/handlers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, local, ok := strings.Cut(string(data), "## Local-only errors")
	if !ok {
		t.Fatal(`docs/handlers.md has no "## Local-only errors" section`)
	}
	for _, e := range []error{&snapshot.TargetNotEmptyError{}, &RequestError{}, &SimulatorError{}} {
		if name := reflect.TypeOf(e).Elem().Name(); !strings.Contains(local, "`"+name+"`") {
			t.Errorf("docs/handlers.md's Local-only errors do not name %s", name)
		}
	}
}
