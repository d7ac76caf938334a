package location_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

// Spark and Hadoop print local table locations as "file:/abs/path" (one slash: DESCRIBE
// DETAIL, the add paths of local tables). Open takes that form as the same directory.
func TestHadoopFileURL(t *testing.T) {
	dir := t.TempDir()
	u := "file:" + filepath.ToSlash(filepath.Join(dir, "t"))
	s, l, err := location.Open(t.Context(), u, location.Config{})
	if err != nil {
		t.Fatalf("Open(%q): %v", u, err)
	}
	roundTrip(t, s, l)
	if _, err := os.Stat(filepath.Join(dir, "t", "_delta_log")); err != nil {
		t.Fatal(err)
	}
}
