package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/internal/logname"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// LogDir is the log directory's key prefix under the table root.
const LogDir = "_delta_log/"

// LastCheckpointKey is the key of the _last_checkpoint hint (docs/reference/delta-protocol.md
// §8).
const LastCheckpointKey = LogDir + "_last_checkpoint"

// CommitFileKey is the key of version v's commit file: _delta_log/<v:020>.json.
func CommitFileKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// CheckpointFileKey is the key of version v's classic checkpoint:
// _delta_log/<v:020>.checkpoint.parquet.
func CheckpointFileKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, v) }

// LastCheckpoint is the _last_checkpoint JSON object (docs/reference/delta-protocol.md §8). It
// is a hint: readers fall back to listing when it is missing or stale.
type LastCheckpoint struct {
	// Version is the checkpoint's table version.
	Version int64 `json:"version"`
	// Size is the number of actions (rows) in the checkpoint.
	Size int64 `json:"size"`
	// Parts is the number of parts of a multi-part checkpoint; nil for a classic one.
	Parts *int `json:"parts,omitempty"`
	// SizeInBytes is the checkpoint's size in bytes (all parts), 0 when unknown.
	SizeInBytes int64 `json:"sizeInBytes,omitempty"`
	// NumOfAddFiles is the number of add rows, 0 when unknown.
	NumOfAddFiles int64 `json:"numOfAddFiles,omitempty"`
	// V2Checkpoint names a UUID-named v2 checkpoint (Spark embeds it; docs/delta-reading.md
	// § V2 checkpoints); nil otherwise. Only its path is used.
	V2Checkpoint *LastCheckpointV2 `json:"v2Checkpoint,omitempty"`
}

// LastCheckpointV2 is the part of a v2 checkpoint Spark embeds in _last_checkpoint that
// this package reads: the checkpoint's file name under _delta_log/.
type LastCheckpointV2 struct {
	Path string `json:"path"`
}

// ReadLastCheckpoint reads _delta_log/_last_checkpoint. ok is false when the file is
// missing or unparsable (a hint only: callers fall back to listing).
func ReadLastCheckpoint(ctx context.Context, store storage.Store) (lc LastCheckpoint, ok bool, err error) {
	rc, err := store.Get(ctx, LastCheckpointKey)
	if errors.Is(err, storage.ErrNotFound) {
		return LastCheckpoint{}, false, nil
	}
	if err != nil {
		return LastCheckpoint{}, false, fmt.Errorf("read _last_checkpoint: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return LastCheckpoint{}, false, fmt.Errorf("read _last_checkpoint: %w", err)
	}
	if json.Unmarshal(data, &lc) != nil || lc.Version < 0 {
		return LastCheckpoint{}, false, nil
	}
	return lc, true, nil
}

// logFileKind is what a _delta_log file name says it is.
type logFileKind int

const (
	kindOther logFileKind = iota
	kindCommit
	kindCheckpoint          // classic <v>.checkpoint.parquet
	kindMultiPartCheckpoint // <v>.checkpoint.<part>.<parts>.parquet
	kindUUIDCheckpoint      // V2 <v>.checkpoint.<uuid>.(json|parquet)
)

// logFile is a parsed _delta_log file name.
type logFile struct {
	kind        logFileKind
	version     int64
	part, parts int
	key         string
}

// parseLogFile classifies a key under _delta_log/ (docs/reference/delta-protocol.md §1.1).
// Temp files, .crc files, compacted files and anything else are kindOther.
func parseLogFile(key string) logFile {
	name, ok := strings.CutPrefix(key, LogDir)
	if !ok || len(name) < 21 || name[20] != '.' || strings.Contains(name, "/") {
		return logFile{}
	}
	v, ok := logname.ParseVersion(name[:20])
	if !ok {
		return logFile{}
	}
	rest := name[21:]
	f := logFile{version: v, key: key}
	switch {
	case rest == "json":
		f.kind = kindCommit
	case rest == "checkpoint.parquet":
		f.kind = kindCheckpoint
	case strings.HasPrefix(rest, "checkpoint."):
		mid := strings.TrimPrefix(rest, "checkpoint.")
		if p := strings.Split(mid, "."); len(p) == 3 && p[2] == "parquet" {
			part, ok1 := logname.ParsePart(p[0])
			parts, ok2 := logname.ParsePart(p[1])
			if ok1 && ok2 && part >= 1 && part <= parts {
				f.kind, f.part, f.parts = kindMultiPartCheckpoint, part, parts
			}
		} else if len(p) == 2 && (p[1] == "json" || p[1] == "parquet") {
			f.kind = kindUUIDCheckpoint
		}
	}
	return f
}

// checkpointRef is one complete checkpoint: a classic file or every part of a multi-part
// set, in part order.
type checkpointRef struct {
	version int64
	keys    []string
	size    int64 // bytes, all parts
}

// logListing is what a listing of _delta_log from some version found.
type logListing struct {
	commits     map[int64]bool
	checkpoints []checkpointRef // ascending by version
	maxCommit   int64           // -1 when none
	maxETag     string          // maxCommit's commit file's ETag, as listed
	// fromStart is true for a listing of the whole log (no start key): it shows every
	// temporary file under _delta_log/.tmp/, which sort before the commits. dynamoTemp is
	// the first DynamoDB log store's temporary commit file it showed
	// (logstore.DynamoTempFile), "" when none.
	fromStart  bool
	dynamoTemp string
}

// listLog lists _delta_log/ from version from onwards and groups the files. Multi-part
// sets missing a part are dropped (docs/reference/delta-protocol.md §7.4); a UUID-named v2
// checkpoint counts when no classic one of its version exists (its sidecars are checked
// when it is read). Log compaction files (<x>.<y>.compacted.json) are ignored, which the
// protocol allows (docs/delta-reading.md § Log compaction): the commits they stand for are
// read instead.
func listLog(ctx context.Context, store storage.Store, from int64) (logListing, error) {
	l, _, err := listLogUpTo(ctx, store, from, 0)
	return l, err
}

// listPage is how many keys one listing request returns (S3's ListObjectsV2 page).
const listPage = 1000

// listLogUpTo is listLog stopping after maxKeys keys (0: no bound); complete is false when
// it stopped there, the rest of the log unlisted (the listing is then not to be used).
func listLogUpTo(ctx context.Context, store storage.Store, from int64, maxKeys int) (l logListing, complete bool, err error) {
	startAfter := ""
	if from > 0 {
		startAfter = fmt.Sprintf("%s%020d", LogDir, from)
	}
	g := newLogGrouper()
	n := 0
	for oi, err := range store.List(ctx, LogDir, startAfter) {
		if err != nil {
			return logListing{}, false, fmt.Errorf("list log: %w", err)
		}
		if n++; maxKeys > 0 && n >= maxKeys {
			// Possibly more beyond: asking for the next key would list another page.
			return logListing{}, false, nil
		}
		g.add(oi)
	}
	l = g.listing()
	l.fromStart = startAfter == ""
	return l, true, nil
}

// logGrouper groups the _delta_log files of a listing, fed in any order, into a
// logListing: listLogUpTo's, and CleanupLog's, which stops its listing early.
type logGrouper struct {
	l         logListing
	classic   map[int64]checkpointRef
	uuidNamed map[int64]checkpointRef
	multi     map[int64]map[int]*partSet // version -> parts -> set
}

// partSet is the parts found of one multi-part checkpoint set. It is kept as the parts
// found, never as a slice of the count its names claim: a name claiming a billion parts
// costs one map entry, and its set is never complete (docs/reference/delta-protocol.md
// §7.4: a set missing a part is ignored).
type partSet struct {
	keys map[int]string // part number -> key
	size int64
}

func newLogGrouper() *logGrouper {
	return &logGrouper{l: logListing{commits: map[int64]bool{}, maxCommit: -1},
		classic: map[int64]checkpointRef{}, uuidNamed: map[int64]checkpointRef{}, multi: map[int64]map[int]*partSet{}}
}

// add takes one listed file; files of other kinds than commits and checkpoints are ignored.
func (g *logGrouper) add(oi storage.ObjectInfo) {
	f := parseLogFile(oi.Key)
	switch f.kind {
	case kindOther:
		if _, ok := logstore.DynamoTempFile(oi.Key); ok && g.l.dynamoTemp == "" {
			g.l.dynamoTemp = oi.Key
		}
	case kindCommit:
		g.l.commits[f.version] = true
		if f.version > g.l.maxCommit {
			g.l.maxCommit, g.l.maxETag = f.version, oi.ETag
		}
	case kindCheckpoint:
		g.classic[f.version] = checkpointRef{version: f.version, keys: []string{f.key}, size: oi.Size}
	case kindUUIDCheckpoint:
		// A classic file of the same version is preferred; either is the whole state.
		if _, ok := g.uuidNamed[f.version]; !ok {
			g.uuidNamed[f.version] = checkpointRef{version: f.version, keys: []string{f.key}, size: oi.Size}
		}
	case kindMultiPartCheckpoint:
		if g.multi[f.version] == nil {
			g.multi[f.version] = map[int]*partSet{}
		}
		ps := g.multi[f.version][f.parts]
		if ps == nil {
			ps = &partSet{keys: map[int]string{}}
			g.multi[f.version][f.parts] = ps
		}
		ps.keys[f.part] = f.key
		ps.size += oi.Size
	}
}

// listing is what the files added so far make: the complete checkpoints, in version order.
func (g *logGrouper) listing() logListing {
	l := g.l
	l.checkpoints = nil
	seen := map[int64]bool{}
	for v, c := range g.classic {
		l.checkpoints = append(l.checkpoints, c)
		seen[v] = true
	}
	for v, c := range g.uuidNamed {
		if !seen[v] {
			l.checkpoints = append(l.checkpoints, c)
			seen[v] = true
		}
	}
	for v, sets := range g.multi {
		if seen[v] {
			continue
		}
		for parts, ps := range sets {
			if len(ps.keys) != parts {
				continue // a part is missing
			}
			keys := make([]string, parts)
			for i := range keys {
				keys[i] = ps.keys[i+1]
			}
			l.checkpoints = append(l.checkpoints, checkpointRef{version: v, keys: keys, size: ps.size})
			break
		}
	}
	sortCheckpoints(l.checkpoints)
	return l
}

func sortCheckpoints(c []checkpointRef) {
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].version < c[j-1].version; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}

// newestCheckpoint is the newest checkpoint at or below version, or nil.
func (l logListing) newestCheckpoint(version int64) *checkpointRef {
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		if l.checkpoints[i].version <= version {
			return &l.checkpoints[i]
		}
	}
	return nil
}
