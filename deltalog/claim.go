package deltalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// LocationMarker is the object Claim puts at the root of a location before the first
// file of a new table goes there. Its name starts with '.', so Delta readers and VACUUM
// (ours and Spark's) never take it for data.
const LocationMarker = ".mssqlcdc-location"

// Location says who made a table's location: the content of LocationMarker.
type Location struct {
	// Sim is true for a location a simulated run (the CLI's --sim, the demo) made: its
	// rows are not a real source's, and a real run must not add to them (nor a simulated
	// run to a real table).
	Sim bool `json:"sim"`
}

// ForeignFilesError: the location has no Delta log (or, for a checkpoint, no offsets) but
// holds files, which a new table would neither own nor describe (a VACUUM of it would
// delete them). ClaimLocation refuses it.
type ForeignFilesError struct {
	URL string
	// Files counts the objects found (at most the first 1,000); Example is one of them.
	Files   int
	Example string
}

func (e *ForeignFilesError) Error() string {
	return fmt.Sprintf("%s holds %d %s (e.g. %s) and no Delta log: a new table there would not own them, and a VACUUM would delete them. Use an empty location, or move the files away",
		e.URL, e.Files, plural(e.Files, "file", "files"), e.Example)
}

// LocationKindError: a simulated run aimed at a real table, or a real run at a simulated
// one.
type LocationKindError struct {
	URL string
	// Sim is what the run is; the location is the other kind (or, for a simulated run, a
	// table this project did not mark as simulated).
	Sim bool
}

func (e *LocationKindError) Error() string {
	if e.Sim {
		return fmt.Sprintf("%s is a table a simulated run did not make: a --sim run writes simulated rows and must not write there; point a copy of the spec at new local paths", e.URL)
	}
	return fmt.Sprintf("%s was made by a simulated run (--sim or the demo): its rows are not the source's; point the spec at another location, or delete that one", e.URL)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Claim makes the table's location fit for a writer of kind want before anything is
// written there: ClaimLocation with the Delta log as the sign of an existing table.
func (t *Table) Claim(ctx context.Context, want Location) error {
	return ClaimLocation(ctx, t.store, want, LogDir)
}

// ClaimLocation makes the location of st fit for a writer of kind want before anything
// is written there, and is safe to repeat (a run killed anywhere reruns it). existing are
// the key prefixes whose objects show that a writer of this kind of location has used it
// (a table's _delta_log/; a checkpoint's offsets/):
//
//   - a location with LocationMarker is claimed already: a marker of the other kind is a
//     *LocationKindError;
//   - an existing location without the marker (a table Spark made, or one this project
//     made before markers) is used as it is by a real run, and refused to a simulated one
//     (*LocationKindError);
//   - any other location that holds a file is a *ForeignFilesError: refused, never
//     adopted;
//   - an empty location gets the marker (created exclusively; a concurrent claim of the
//     same kind passes alike).
//
// Call it before the first file of a new location is written: files a killed first
// attempt left behind then sit next to the marker and do not make the rerun refuse.
func ClaimLocation(ctx context.Context, st storage.Store, want Location, existing ...string) error {
	got, ok, err := readMarker(ctx, st)
	if err != nil {
		return err
	}
	if ok {
		if got.Sim != want.Sim {
			return &LocationKindError{URL: st.URL(), Sim: want.Sim}
		}
		return nil
	}
	for _, prefix := range existing {
		used, err := countObjects(ctx, st, prefix, nil)
		if err != nil {
			return err
		}
		if used.n > 0 {
			if want.Sim {
				return &LocationKindError{URL: st.URL(), Sim: true}
			}
			return nil
		}
	}
	found, err := countObjects(ctx, st, "", func(key string) bool { return key != LocationMarker })
	if err != nil {
		return err
	}
	if found.n > 0 {
		return &ForeignFilesError{URL: st.URL(), Files: found.n, Example: found.example}
	}
	b, _ := json.Marshal(want)
	err = st.PutIfAbsent(ctx, LocationMarker, append(b, '\n'))
	if errors.Is(err, storage.ErrExists) {
		return ClaimLocation(ctx, st, want, existing...) // claimed meanwhile: check its kind
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", st.URL(), err)
	}
	return nil
}

// readMarker reads LocationMarker; ok is false when there is none.
func readMarker(ctx context.Context, st storage.Store) (Location, bool, error) {
	rc, err := st.Get(ctx, LocationMarker)
	if errors.Is(err, storage.ErrNotFound) {
		return Location{}, false, nil
	}
	if err != nil {
		return Location{}, false, fmt.Errorf("read %s: %w", LocationMarker, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return Location{}, false, fmt.Errorf("read %s: %w", LocationMarker, err)
	}
	var loc Location
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&loc); err != nil {
		return Location{}, false, fmt.Errorf("%s/%s is not this project's marker: %w", st.URL(), LocationMarker, err)
	}
	return loc, true, nil
}

type objectCount struct {
	n       int
	example string
}

// countObjects counts the objects under prefix that keep accepts (nil: all), stopping at
// 1,000.
func countObjects(ctx context.Context, st storage.Store, prefix string, keep func(string) bool) (objectCount, error) {
	var c objectCount
	for oi, err := range st.List(ctx, prefix, "") {
		if err != nil {
			return c, fmt.Errorf("list %s: %w", st.URL(), err)
		}
		if keep != nil && !keep(oi.Key) {
			continue
		}
		if strings.HasPrefix(oi.Key, prefix) {
			if c.n == 0 {
				c.example = oi.Key
			}
			if c.n++; c.n >= 1000 {
				break
			}
		}
	}
	return c, nil
}
