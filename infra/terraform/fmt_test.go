package terraform_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"
)

// TestFormatted: every .tf file is as hclwrite.Format leaves it, the canonical layout
// `terraform fmt` applies (aligned equals signs, two-space indents).
func TestFormatted(t *testing.T) {
	for _, dir := range terraformDirs(t) {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
		for _, p := range paths {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := hclwrite.Format(src); !bytes.Equal(got, src) {
				t.Errorf("%s is not formatted; its canonical form:\n%s", p, got)
			}
		}
	}
}
