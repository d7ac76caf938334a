package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// command is one subcommand. run gets the arguments after the subcommand's name and
// returns an error: flag.ErrHelp exits 0 (parseFlags printed the usage on stdout); a
// *usageError prints its message on stderr (the usage line, where the command put it
// there) and exits 2.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand's file calls it from init.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("mssqlcdc: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// secondsFlag is the *usageError for the flag --name, a duration in seconds, outside the
// spec's bounds for durations (config.SecondsProblem: 0 up to 366 days; NaN and the infinities
// refused), naming the flag, its range and what 0 means, then usage; nil when v is in
// range. A spec field's message would say "invalid table spec" of a spec that is fine.
func secondsFlag(name string, v float64, zero, usage string) error {
	if p := config.SecondsProblem("--"+name, v, zero); p != nil {
		return &usageError{msg: p.Field + " " + p.Reason + "\n" + usage}
	}
	return nil
}

// flagMistake returns a ConfigError whose every problem is on a field the command line
// gave (flags maps the field to its flag) as the usage mistake of those flags (exit 2),
// "--flag: reason; ...": its own message would say "invalid table spec" (or "invalid
// seed request") of a value the spec never held. Any other error, and a ConfigError with
// a problem on another field, is returned as it is.
func flagMistake(err error, flags map[string]string) error {
	var ce *config.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) == 0 {
		return err
	}
	parts := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		flag, ok := flags[p.Field]
		if !ok {
			return err
		}
		parts[i] = flag + ": " + p.Reason
	}
	return &usageError{msg: strings.Join(parts, "; ")}
}

// flagSet reports whether the command line gave the flag name, a value equal to its
// default included (a 0 that means "no bound" against a spec's value).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// errFlags is a flag the flag package refused: it has printed the message and the
// usage already, so run only exits 2.
var errFlags = errors.New("bad flags")

// parseFlags parses args into fs. Help asked for (-h, -help, --help) is an answer: fs's
// usage goes to stdout and the error is flag.ErrHelp (exit 0). Any other mistake is
// errFlags (exit 2), the flag package's message and the usage already on fs's output
// (stderr). The flag package prints the usage for both through fs.Usage, so what it
// writes while parsing is held and sent to one or the other.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	out := fs.Output()
	var held bytes.Buffer
	fs.SetOutput(&held)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		_, _ = held.WriteTo(stdout)
		return err
	}
	_, _ = held.WriteTo(out)
	return errFlags
}

// isHelp reports whether arg asks mssqlcdc itself for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// No command is a mistake (a script that lost its arguments must not succeed):
		// the usage goes to stderr and the exit status is 2, as for an unknown command.
		usage(stderr)
		return 2
	}
	if args[0] == "help" && len(args) > 1 && !isHelp(args[1]) {
		// "mssqlcdc help <command>" is "mssqlcdc <command> -h"; an unknown command is
		// the same mistake either way.
		args = []string{args[1], "-h"}
	}
	if isHelp(args[0]) {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mssqlcdc: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, prog := withProgress(ctx)
	err := c.run(ctx, args[1:], stdout, stderr)
	var ue *usageError
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(err, errFlags) && !errors.As(err, &ue):
		// Interrupted (Ctrl-C, SIGTERM): one line, whatever chain of context errors the
		// command returned, and a non-zero exit, since the work is not done.
		fmt.Fprintln(stderr, prog.interruptedLine(c.name))
		return exitInterrupted
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlags):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mssqlcdc %s: %s\n", c.name, ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "mssqlcdc %s: %v\n", c.name, err)
		if rw := (*source.LSNRewoundError)(nil); errors.As(err, &rw) && simArg(args[1:]) {
			// The stamps' staging lives under the checkpoint prefix, so the remedy is the same.
			what := "checkpoint was written"
			if rw.RecordedBy != source.RecordedByCheckpoint {
				what = rw.RecordedBy + " was recorded"
			}
			fmt.Fprintf(stderr, "mssqlcdc %s: with --sim, this %s on another simulated database: each --sim run builds it afresh, "+
				"the same only within one UTC hour, invoke --sim builds a shorter history than stream --sim (backfill --sim and reconcile --sim build the stream's), and a stream --sim that polled "+
				"(no --available-now) read changes no new run makes; delete the --sim tables and checkpoint "+
				"and run again (docs/getting-started.md)\n", c.name, what)
		}
		return 1
	}
}

// simArg reports whether args set --sim (the flag package's spellings: -sim, --sim,
// --sim=true).
func simArg(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "sim" && (!hasVal || val == "true" || val == "1") {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "mssqlcdc: SQL Server CDC into Delta Lake tables.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: mssqlcdc <command> [flags]   (mssqlcdc <command> -h for its flags)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %s%s  %s\n", n, strings.Repeat(" ", width-len(n)), commands[n].summary)
	}
}

// newFlags returns a flag set for a subcommand whose output is stderr (parseFlags sends
// the usage to stdout when -h asked for it) and whose usage is a usage line, the
// command's summary (what mssqlcdc --help lists) and its flags. A command with usage text
// of its own sets fs.Usage after this.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mssqlcdc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(w, "Usage: mssqlcdc %s [flags]\n", name)
		} else {
			fmt.Fprintf(w, "Usage: mssqlcdc %s\n", name)
		}
		if c, ok := commands[name]; ok {
			fmt.Fprintln(w, c.summary)
		}
		if n > 0 {
			fmt.Fprintln(w, "Flags:")
			fs.PrintDefaults()
		}
	}
	return fs
}
