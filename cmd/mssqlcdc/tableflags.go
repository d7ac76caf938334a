package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

// addTableFlags registers on fs the flags that say how to reach a table at a URL (S3
// region and endpoint, the DynamoDB log table) and returns the config they fill, for
// location.Open. Shared by the commands that open a table by URL (inspect, show, maintain).
func addTableFlags(fs *flag.FlagSet) *location.Config {
	var cfg location.Config
	fs.StringVar(&cfg.Region, "region", "", "S3 region (default: from the environment, else us-east-1)")
	fs.StringVar(&cfg.Endpoint, "endpoint", "", "S3 endpoint URL, for an emulator")
	fs.BoolVar(&cfg.PathStyle, "path-style", false, "path-style S3 addressing, for an emulator")
	fs.StringVar(&cfg.DynamoTable, "dynamo-table", "", "DynamoDB log table, when the table commits through one (completes a half-done commit)")
	fs.StringVar(&cfg.DynamoRegion, "dynamo-region", "", "DynamoDB log table region (default: the S3 region)")
	fs.StringVar(&cfg.DynamoEndpoint, "dynamo-endpoint", "", "DynamoDB endpoint URL, for an emulator")
	fs.StringVar(&cfg.TablePathScheme, "table-path-scheme", "", "scheme of the DynamoDB log table's tablePath key, as the Spark writers use: s3, s3a or s3n (default: the URL's)")
	return &cfg
}

// parseInterspersed parses args into fs, allowing flags before, between and after the
// positional arguments ("inspect TABLE_URL --json"): Go's flag package alone stops at the
// first argument that is not a flag. It returns the positional arguments in order; help
// and mistakes are parseFlags's (the usage to stdout for -h).
func parseInterspersed(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var positional []string
	for rest := args; ; {
		if err := parseFlags(fs, rest, stdout); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// versionFlag is --version of the commands that read a table at a version (inspect, show):
// a Delta version, 0 or more. Unset, it is the latest version; its zero value prints no
// default in -h (flag's "(default -1)" read as a real version). A negative value is
// refused when parsed, a usage error, rather than taken as "the latest".
type versionFlag struct {
	v   int64
	set bool
}

func (f *versionFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatInt(f.v, 10)
}

func (f *versionFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("want a Delta version, 0 or more: %q", s)
	}
	f.v, f.set = v, true
	return nil
}

// version is the version asked for, or -1 for the latest (deltalog's Snapshot).
func (f *versionFlag) version() int64 {
	if !f.set {
		return -1
	}
	return f.v
}

// addVersionFlag registers --version on fs; verb says what the command does at it
// ("inspect", "read").
func addVersionFlag(fs *flag.FlagSet, verb string) *versionFlag {
	var f versionFlag
	fs.Var(&f, "version", verb+" version `N` (time travel) (default: the latest version)")
	return &f
}
