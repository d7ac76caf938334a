// Package checkpoint is the stream's progress under a prefix (S3 or local), in the layout
// of docs/stream.md "Checkpoint layout":
//
//	offsets/<n>.json   batch n's start and end offset, written with a conditional put
//	                   (PutIfAbsent) BEFORE the batch is read
//	commits/<n>.json   written after batch n's bronze and facts commits
//	offsets/start-<L>.json  the start a bootstrap hands a fresh checkpoint (Start)
//
// Resume rule: the highest n in offsets/. If commits/<n> exists, the next batch is n+1
// starting at offsets/<n>'s end; if it is missing, batch n is re-run with the same range
// (its bronze append and facts row are then skipped by their Delta txn). The conditional
// put is also the lock: a second stream on the same checkpoint that tries to write the
// same offsets/<n> loses and stops with *ConcurrentStreamError (reserved concurrency 1
// makes this a misconfiguration, not a race to be won).
package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Key prefixes under the checkpoint root.
const (
	OffsetsDir = "offsets/"
	CommitsDir = "commits/"
)

// DefaultRetain is how many batches' files Clean keeps (as Spark's minBatchesToRetain).
const DefaultRetain = 100

// Batch is the content of offsets/<n>.json.
type Batch struct {
	ID    int64  `json:"batch"`
	AppID string `json:"app_id"`
	// Start is the offset the batch starts after (the previous batch's end); End is the
	// last commit it reads: the batch reads [next(Start.LSN), End.LSN].
	Start lsn.Offset `json:"start"`
	End   lsn.Offset `json:"end"`
	// Starting is the spec's startingLsn batch 0 was planned from ("earliest", "latest"
	// or an LSN), so that a start changed before batch 0 committed is told apart
	// (RetakeFirst); empty on later batches, with bootstrap and in older files.
	Starting string `json:"starting,omitempty"`
	// Writer identifies the stream invocation that wrote the file, so that a retried put
	// of our own is told apart from a rival's.
	Writer string `json:"writer"`
	// WrittenAt is when the offsets file was written (UTC).
	WrittenAt time.Time `json:"written_at"`
}

// Commit is the content of commits/<n>.json.
type Commit struct {
	ID int64 `json:"batch"`
	// Rows is the change rows the batch appended to bronze.
	Rows int64 `json:"rows"`
	// BronzeVersion is the bronze version holding the batch (-1 when it had no rows);
	// FactsVersion the facts version holding its row (-1 when the row is still pending:
	// FactsRows).
	BronzeVersion int64 `json:"bronze_version"`
	FactsVersion  int64 `json:"facts_version"`
	// FactsThrough is the newest batch whose facts rows the stream had committed to the
	// facts table when it wrote this file (docs/decisions/0013-facts-rows-deferred.md); nil
	// in files written before rows were deferred, where every batch wrote its own row
	// (read it through FactsThroughBatch).
	FactsThrough *int64 `json:"facts_through,omitempty"`
	// FactsPendingSince is when the oldest batch after FactsThrough was committed (nil when
	// none is pending).
	FactsPendingSince *time.Time `json:"facts_pending_since,omitempty"`
	// FactsRows are the batch's facts rows (a JSON array of core/facts rows) while they
	// are not in the facts table yet; omitted when the batch committed them itself.
	FactsRows json.RawMessage `json:"facts_rows,omitempty"`
	Writer    string          `json:"writer"`
	WrittenAt time.Time       `json:"written_at"`
}

// FactsThroughBatch is FactsThrough, or for a file written before facts rows were deferred
// (every batch then committed its own row) the batch itself.
func (m Commit) FactsThroughBatch() int64 {
	if m.FactsThrough == nil {
		return m.ID
	}
	return *m.FactsThrough
}

// ConcurrentStreamError: another stream wrote the same batch's checkpoint file first.
// Step Functions matches the name ConcurrentStreamError.
type ConcurrentStreamError struct {
	Checkpoint string
	Key        string
}

func (e *ConcurrentStreamError) Error() string {
	return fmt.Sprintf("another stream is writing checkpoint %s (%s was written by someone else): run one stream per checkpoint", e.Checkpoint, e.Key)
}

// AppIDMismatchError: the checkpoint belongs to another app_id. A new checkpoint needs a
// new app_id and an app_id keeps its checkpoint (docs/stream.md).
type AppIDMismatchError struct {
	Checkpoint    string
	Want, Written string
}

func (e *AppIDMismatchError) Error() string {
	return fmt.Sprintf("checkpoint %s belongs to app_id %q, not %q: give each stream its own checkpoint and app_id", e.Checkpoint, e.Written, e.Want)
}

// Checkpoint reads and writes one stream's checkpoint. It remembers what it wrote, so a
// process that keeps it (a warm Lambda) resumes with one listing (Resume) and reads back
// the commit files it wrote without a request (Commits). Safe for concurrent use.
type Checkpoint struct {
	store  storage.Store
	appID  string
	writer string
	// Retain is how many newest batches Clean keeps; DefaultRetain when 0.
	Retain int

	mu sync.Mutex
	// last is the state after the newest commit file this Checkpoint wrote (nil: none), and
	// lastTag the ETag of last.Last's offsets file as its put returned it ("": unknown).
	last    *State
	lastTag string
	// offsets are the offsets files written and not yet committed, by batch.
	offsets map[int64]written
	// commits are the commit files written or read, by batch (see Commits), bounded by
	// remember.
	commits map[int64]Commit
	// gens is what the last Generations call read (nil: none yet); byGen the generations'
	// checkpoints handed out by Generation.
	gens  *genMemo
	byGen map[int]*Checkpoint
}

// New returns the checkpoint of appID rooted at store (no I/O).
func New(store storage.Store, appID string) *Checkpoint {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return &Checkpoint{store: store, appID: appID, writer: hex.EncodeToString(r[:])}
}

// State is where a stream resumes.
type State struct {
	// Next is the batch to run: a re-run of Pending.ID, or the one after the last commit.
	Next int64
	// Pending is the batch whose offsets exist without a commit: it must be re-run with
	// this range. nil when the last batch is committed (or there is none).
	Pending *Batch
	// Last is the newest committed batch's offsets, nil when none is committed.
	Last *Batch
	// LastCommit is Last's commit file (nil when none is committed, or when its file
	// is gone).
	LastCommit *Commit
	// Remembered is true when the state came from this Checkpoint's memory of its own
	// writes (the listing showed nothing newer), not from reading the files.
	Remembered bool
	// Start is the newest start a bootstrap handed a fresh checkpoint (StartKey; its
	// Snapshot holds the LSN only); nil when the checkpoint holds a batch, or no start file
	// (checkpoints written before they existed, a stream without bootstrap).
	Start *Start
}

// Fresh reports whether the checkpoint holds no batch at all.
func (s State) Fresh() bool { return s.Pending == nil && s.Last == nil }

// written is an offsets file this Checkpoint wrote, with the ETag its put returned ("":
// unknown).
type written struct {
	b   Batch
	tag string
}

// Resume reads the checkpoint: the highest batch in offsets/ and whether it is committed.
// When the highest batch's file is the very file this Checkpoint wrote for the batch it
// committed last (the listing shows the ETag its put returned: the number alone could be
// another stream's, on a checkpoint deleted and run again up to the same batch), its
// memory answers and the listing is the only request (State.Remembered); otherwise the
// files are read.
func (c *Checkpoint) Resume(ctx context.Context) (State, error) {
	top, topTag, ok, start, err := c.highest(ctx, OffsetsDir)
	if err != nil {
		return State{}, fmt.Errorf("read checkpoint: %w", err)
	}
	if !ok {
		st := State{Next: 0}
		if !start.IsZero() {
			st.Start = &Start{AppID: c.appID, Snapshot: lsn.Offset{LSN: start}}
		}
		return st, nil
	}
	c.mu.Lock()
	last, lastTag := c.last, c.lastTag
	c.mu.Unlock()
	if last != nil && last.Last != nil && last.Last.ID == top && lastTag != "" && lastTag == topTag {
		st := *last
		st.Remembered = true
		return st, nil
	}
	// The listing does not show this Checkpoint's own newest file: another stream wrote
	// since, or the checkpoint was reset, restored or stripped. What it remembers of commit
	// files (Commits) and of its last state may then name files that are gone or are now
	// another stream's under the same batch numbers, so it is all dropped and read afresh.
	c.forget()
	b, err := c.readBatch(ctx, top)
	if err != nil {
		return State{}, err
	}
	m, err := c.readCommit(ctx, top)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return State{}, err
	}
	if err == nil {
		return State{Next: top + 1, Last: b, LastCommit: m}, nil
	}
	st := State{Next: top, Pending: b}
	if top > 0 {
		prev, err := c.readBatch(ctx, top-1)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return State{}, err
		}
		st.Last = prev
		if prev != nil {
			m, err := c.readCommit(ctx, top-1)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return State{}, err
			}
			st.LastCommit = m
		}
	}
	return st, nil
}

// ResumeWarm is Resume for a process that keeps this Checkpoint (a warm Lambda), without
// listing offsets/: one HEAD of the offsets file of the batch it committed last, which
// answers only when that file is the very one it wrote (the ETag its conditional put
// returned). ok is false, with no error, when the memory cannot answer: this Checkpoint
// committed nothing, wrote offsets it did not commit (an invocation that failed
// part-way), does not know its file's ETag (a store that does not say, or a put whose
// answer was lost), or the file is gone or another's (the checkpoint deleted, rewound, run
// again, or cleaned by a process that ran far ahead); the caller then resumes with Resume.
//
// Unlike Resume's, this answer does not show that no other process wrote a later batch:
// the caller must write the next batch's offsets with WriteNextOffsets, whose put is the
// fence, before it writes anything else, and check the facts table and bronze as a cold
// resume does (docs/decisions/0017-warm-resume-by-head.md). State.Remembered is true.
func (c *Checkpoint) ResumeWarm(ctx context.Context) (st State, ok bool, err error) {
	last, tag, ok := c.warm()
	if !ok {
		return State{}, false, nil
	}
	info, err := c.store.Head(ctx, offsetKey(last.Last.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return State{}, false, nil
	} else if err != nil {
		return State{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	if info.ETag != tag {
		return State{}, false, nil
	}
	st = *last
	st.Remembered = true
	return st, true, nil
}

// Warm reports whether ResumeWarm may answer (no request): this Checkpoint committed a
// batch whose offsets file's ETag it knows, and wrote no offsets after it.
func (c *Checkpoint) Warm() bool {
	_, _, ok := c.warm()
	return ok
}

// warm is the remembered state after the last commit and its offsets file's ETag, ok
// when ResumeWarm may ask about it.
func (c *Checkpoint) warm() (last *State, tag string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil || c.last.Last == nil || c.lastTag == "" {
		return nil, "", false
	}
	for id := range c.offsets {
		if id > c.last.Last.ID {
			return nil, "", false
		}
	}
	return c.last, c.lastTag, true
}

// Commits are the commit files of batches from..to that exist, in order: from memory when
// this Checkpoint wrote or read them, else read (one GET each).
func (c *Checkpoint) Commits(ctx context.Context, from, to int64) ([]Commit, error) {
	var out []Commit
	for n := from; n <= to; n++ {
		c.mu.Lock()
		m, ok := c.commits[n]
		c.mu.Unlock()
		if !ok {
			got, err := c.readCommit(ctx, n)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			m = *got
		}
		out = append(out, m)
	}
	return out, nil
}

// WriteOffsets records batch b before it is read. *ConcurrentStreamError when the file
// exists (another stream got there first); a file this Checkpoint wrote for b before
// (its put's answer lost) is taken as written.
func (c *Checkpoint) WriteOffsets(ctx context.Context, b Batch) error {
	return c.writeOffsets(ctx, b, false)
}

// WriteNextOffsets is WriteOffsets for the first batch after ResumeWarm: the put must
// create the file. Any file already there is a *ConcurrentStreamError, this Checkpoint's
// own earlier one included (written by an invocation whose put's answer was lost, it may
// have been resumed as pending and committed by another process since), so that success
// shows that no process wrote offsets/<b.ID> (docs/decisions/0017-warm-resume-by-head.md).
func (c *Checkpoint) WriteNextOffsets(ctx context.Context, b Batch) error {
	return c.writeOffsets(ctx, b, true)
}

func (c *Checkpoint) writeOffsets(ctx context.Context, b Batch, fence bool) error {
	b.AppID = c.appID
	b.Writer = c.writer
	if b.WrittenAt.IsZero() {
		b.WrittenAt = time.Now().UTC()
	}
	tag, err := c.putOnceTag(ctx, offsetKey(b.ID), b, fence)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offsets == nil {
		c.offsets = map[int64]written{}
	}
	c.offsets[b.ID] = written{b, tag}
	return nil
}

// RetakeFirst replaces the offsets of a fresh checkpoint's batch 0 by b (b.ID must be 0),
// for a startingLsn changed before batch 0 committed. The caller has checked that batch 0
// is in neither bronze nor facts; commits/0 must not exist. The old file is deleted, then
// b written as WriteOffsets writes it: a crash in between leaves a fresh checkpoint,
// which starts from the spec's start anyway.
func (c *Checkpoint) RetakeFirst(ctx context.Context, b Batch) error {
	if b.ID != 0 {
		return fmt.Errorf("checkpoint: RetakeFirst of batch %d, want 0", b.ID)
	}
	if done, err := c.exists(ctx, commitKey(0)); err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	} else if done {
		return &ConcurrentStreamError{Checkpoint: c.store.URL(), Key: commitKey(0)}
	}
	if err := c.store.Delete(ctx, offsetKey(0)); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", offsetKey(0), err)
	}
	return c.WriteOffsets(ctx, b)
}

// WriteCommit records that batch m.ID is in bronze and facts. *ConcurrentStreamError when
// the file exists.
func (c *Checkpoint) WriteCommit(ctx context.Context, m Commit) error {
	m.Writer = c.writer
	if m.WrittenAt.IsZero() {
		m.WrittenAt = time.Now().UTC()
	}
	if err := c.putOnce(ctx, commitKey(m.ID), m); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remember(m)
	if w, ok := c.offsets[m.ID]; ok {
		c.last, c.lastTag = &State{Next: m.ID + 1, Last: &w.b, LastCommit: &m}, w.tag
		delete(c.offsets, m.ID)
	} else {
		c.last, c.lastTag = nil, "" // batch m's offsets were written by an earlier process: read them back
	}
	return nil
}

// forget drops all this Checkpoint remembers of the files: its last state, the offsets it
// wrote and did not commit, the commit files it wrote or read. What it reads next is
// remembered again; a batch it commits after this (a Pending one re-run) is read back at
// the next Resume.
func (c *Checkpoint) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.lastTag = nil, ""
	c.offsets, c.commits = nil, nil
}

// remember keeps commit file m for Commits, and drops those whose rows are in the facts
// table. c.mu is held.
func (c *Checkpoint) remember(m Commit) {
	if c.commits == nil {
		c.commits = map[int64]Commit{}
	}
	c.commits[m.ID] = m
	through := m.FactsThroughBatch()
	for id := range c.commits {
		if id <= through {
			delete(c.commits, id)
		}
	}
}

// Clean deletes offsets and commits of batches older than the newest Retain before
// batch upTo, oldest batch first (offsets/<n>, then commits/<n>, by batch number, not by
// the keys' text order, in which "offsets/10" comes before "offsets/9"), and stops at the
// first delete that fails. So whatever it deleted, the files left in offsets/ are those of
// a contiguous run of batches up to the newest (if offsets/<n> exists, every higher batch's
// offsets file written still does), and likewise in commits/; a re-run deletes the rest.
// On a store that deletes many keys in one request (storage.KeysDeleter: S3's
// DeleteObjects) the keys go in that order too, and a key the store reports it could not
// delete is a failure; the keys of one request are not deleted in a stated order, so
// such a failure can leave a lower key of that request behind a higher one until the
// re-run. Errors are returned, but callers may ignore them: stale files are harmless.
func (c *Checkpoint) Clean(ctx context.Context, upTo int64) error {
	below := upTo - int64(c.Retains())
	if below <= 0 {
		return nil
	}
	type file struct {
		n      int64
		commit bool
		key    string
	}
	var old []file
	for _, dir := range []string{OffsetsDir, CommitsDir} {
		for info, err := range c.store.List(ctx, dir, "") {
			if err != nil {
				return fmt.Errorf("clean checkpoint: %w", err)
			}
			if n, ok := batchOf(dir, info.Key); ok && n < below {
				old = append(old, file{n, dir == CommitsDir, info.Key})
			}
		}
	}
	slices.SortFunc(old, func(a, b file) int {
		if a.n != b.n {
			return cmp.Compare(a.n, b.n)
		}
		return cmp.Compare(b2i(a.commit), b2i(b.commit))
	})
	keys := make([]string, len(old))
	for i, f := range old {
		keys[i] = f.key
	}
	// One request on S3 (DeleteObjects), not one per file; else one Delete each, in order,
	// up to the first that fails.
	if err := storage.DeleteKeys(ctx, c.store, keys); err != nil {
		return fmt.Errorf("clean checkpoint: %w", err)
	}
	return nil
}

// Retains is how many newest batches Clean keeps: Retain, or DefaultRetain when 0.
func (c *Checkpoint) Retains() int {
	if c.Retain <= 0 {
		return DefaultRetain
	}
	return c.Retain
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// putOnce writes v to key with a conditional put (putOnceTag).
func (c *Checkpoint) putOnce(ctx context.Context, key string, v any) error {
	_, err := c.putOnceTag(ctx, key, v, false)
	return err
}

// putOnceTag writes v to key with a conditional put and returns the ETag of the file
// written ("" when the store does not say, or when the file is our own earlier attempt
// whose answer was lost). *ConcurrentStreamError when another's file is there, or with
// fence any file.
func (c *Checkpoint) putOnceTag(ctx context.Context, key string, v any, fence bool) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("write checkpoint %s: %w", key, err)
	}
	tag, err := storage.PutIfAbsentTag(ctx, c.store, key, data)
	if errors.Is(err, storage.ErrExists) && fence {
		return "", &ConcurrentStreamError{Checkpoint: c.store.URL(), Key: key}
	}
	if errors.Is(err, storage.ErrExists) {
		existing, rerr := c.get(ctx, key)
		if rerr == nil && sameContent(existing, data) {
			return "", nil // our own earlier attempt whose answer was lost
		}
		return "", &ConcurrentStreamError{Checkpoint: c.store.URL(), Key: key}
	}
	if err != nil {
		return "", fmt.Errorf("write checkpoint %s: %w", key, err)
	}
	return tag, nil
}

// sameContent compares two checkpoint files ignoring written_at, so a retried put of the
// same batch by the same writer is not mistaken for a rival's (writer differs).
func sameContent(a, b []byte) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, "written_at")
	delete(mb, "written_at")
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	return bytes.Equal(ja, jb)
}

func (c *Checkpoint) readBatch(ctx context.Context, n int64) (*Batch, error) {
	data, err := c.get(ctx, offsetKey(n))
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", offsetKey(n), err)
	}
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", offsetKey(n), err)
	}
	if b.AppID != "" && c.appID != "" && b.AppID != c.appID {
		return nil, &AppIDMismatchError{Checkpoint: c.store.URL(), Want: c.appID, Written: b.AppID}
	}
	return &b, nil
}

// readCommit reads commits/<n>.json (storage.ErrNotFound when absent) and remembers it.
func (c *Checkpoint) readCommit(ctx context.Context, n int64) (*Commit, error) {
	data, err := c.get(ctx, commitKey(n))
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("read checkpoint %s: %w", commitKey(n), err)
	}
	var m Commit
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", commitKey(n), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remember(m)
	return &m, nil
}

func (c *Checkpoint) get(ctx context.Context, key string) ([]byte, error) {
	return c.store.GetRange(ctx, key, 0, -1)
}

// exists reports whether key exists (one HEAD).
func (c *Checkpoint) exists(ctx context.Context, key string) (bool, error) {
	_, err := c.store.Head(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// highest is the highest batch with a file in dir (found false: none) with that file's
// ETag, and the newest LSN of the start files the listing showed (lsn.Zero: none).
func (c *Checkpoint) highest(ctx context.Context, dir string) (top int64, tag string, found bool, start lsn.LSN, err error) {
	top = -1
	for info, err := range c.store.List(ctx, dir, "") {
		if err != nil {
			return 0, "", false, lsn.Zero, err
		}
		if n, ok := batchOf(dir, info.Key); ok && n > top {
			top, tag, found = n, info.ETag, true
		}
		if l, ok := startLSN(info.Key); ok && start.Less(l) {
			start = l
		}
	}
	return top, tag, found, start, nil
}

// batchOf is the batch number of dir's file key ("offsets/12.json": 12), written as
// offsetKey and commitKey write it (keyNumber); false for any other key.
func batchOf(dir, key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, dir)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok {
		return 0, false
	}
	return keyNumber(name)
}

// keyNumber returns the number written as s in a key name the checkpoint writes (a batch,
// a claim, an attempt: strconv.FormatInt or Itoa of a number >= 0). s must be exactly that
// form: ASCII digits, no sign, no leading zero but "0" itself, at most math.MaxInt64.
// False for anything else ("+5", "05", " 5", "", a number above math.MaxInt64), which
// strconv.ParseInt would partly take: a name of another form is no file of that number
// and is ignored, as a foreign name is. deltalog/internal/logname reads Delta versions by
// the same rule (their fixed width in place of "no leading zero").
func keyNumber(s string) (int64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64) // digits only: fails only above math.MaxInt64
	return n, err == nil
}

func offsetKey(n int64) string { return OffsetsDir + strconv.FormatInt(n, 10) + ".json" }
func commitKey(n int64) string { return CommitsDir + strconv.FormatInt(n, 10) + ".json" }
