package connect

import (
	"fmt"
	"os"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

// SpecEnv names the environment variable holding the table spec JSON (docs/spec.md) in
// Lambda; the Terraform module writes it.
const SpecEnv = "MSSQLCDC_SPEC"

// SpecFromEnv parses the spec in SpecEnv, read with getenv. An unset or empty variable is a
// *config.ConfigError saying so (rather than a JSON decoder's "EOF").
func SpecFromEnv(getenv func(string) string) (*config.Spec, error) {
	data := getenv(SpecEnv)
	if data == "" {
		return nil, &config.ConfigError{Problems: []config.Problem{{Field: "(document)",
			Reason: fmt.Sprintf("environment variable %s is empty or unset: set it to the table spec JSON (docs/spec.md)", SpecEnv)}}}
	}
	return config.Parse([]byte(data))
}

// SpecFile reads and parses a spec file.
func SpecFile(path string) (*config.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return config.Parse(data)
}
