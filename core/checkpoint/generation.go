package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Generations (docs/stream.md "Generations"; docs/reference/original-library.md §7.4).
// After data loss the stream starts again from a new snapshot in a new generation: a
// checkpoint and app_id of its own, so that no batch id of the old generation is reused.
// Generation 0 is the checkpoint prefix and the app_id as configured; generation n >= 1 is
//
//	<checkpoint>/generations/<n>/offsets/, commits/   its stream's checkpoint
//	<checkpoint>/generations/<n>/attempts/<a>.json     an attempt to open it (PutIfAbsent)
//	<checkpoint>/generations/<n>/attempts/<a>.failed.json  that attempt failed (PutIfAbsent)
//	<checkpoint>/generations/<n>/generation.json       the commit point (PutIfAbsent)
//
// with app_id <app_id>.g<n>. A generation exists once its generation.json does, and
// generation n+1 is opened only from generation n, so the live generation is the highest n
// whose generation.json exists (0 when none). An attempt is open while neither its failure
// nor the generation's commit exists. Every file is written once with a conditional put
// and never changed, so a rerun of any step reads what the first run decided. Earlier
// generations' files stay, unread.
const GenerationsDir = "generations/"

// GenerationPrefix is the key prefix of generation n's files under the checkpoint root:
// "" for 0, "generations/<n>/" above.
func GenerationPrefix(n int) string {
	if n <= 0 {
		return ""
	}
	return GenerationsDir + strconv.Itoa(n) + "/"
}

// GenerationAppID is the app_id of generation n: appID for 0, <appID>.g<n> above (the
// original's ids, docs/reference/original-library.md §7.4). Bronze appends, facts rows and
// the generation's checkpoint carry it.
func GenerationAppID(appID string, n int) string {
	if n <= 0 {
		return appID
	}
	return appID + ".g" + strconv.Itoa(n)
}

// Snapshot modes of a generation (config.SnapshotFull, config.SnapshotChunked).
const (
	ModeFull    = "full"
	ModeChunked = "chunked"
)

// Attempt is generations/<n>/attempts/<a>.json: the stream found its start purged and opens
// generation n with a new snapshot in Mode. Written once, before any snapshot is taken.
type Attempt struct {
	Generation int    `json:"generation"`
	Attempt    int    `json:"attempt"`
	Mode       string `json:"mode"`
	// From is the last offset generation n-1 processed: the changes after it are the gap.
	From lsn.Offset `json:"from"`
	// MinLSN is the retention watermark (the capture instance's min_lsn) when the loss was
	// found, CaptureInstance that instance; LostToTS the commit time of MinLSN (or of the
	// first commit after it), nil when unknown.
	MinLSN          lsn.LSN    `json:"min_lsn"`
	CaptureInstance string     `json:"capture_instance"`
	LostToTS        *time.Time `json:"lost_to_ts"`
	StartedAt       time.Time  `json:"started_at"`
}

// LostFromTS is the gap's start: the commit time of From, nil when From is no commit's (an
// explicit startingLsn, nothing processed yet).
func (a Attempt) LostFromTS() *time.Time {
	if !a.From.HasTime() {
		return nil
	}
	t := a.From.CommitTS.UTC()
	return &t
}

// Failure is generations/<n>/attempts/<a>.failed.json: why attempt a gave up. A failed
// attempt counts for the anti-loop interval like a re-snapshot.
type Failure struct {
	FailedAt time.Time `json:"failed_at"`
	// Snapshot is the snapshot the attempt took, if any (its LSN was purged before the
	// stream could read past it).
	Snapshot lsn.LSN `json:"snapshot"`
	Reason   string  `json:"reason"`
}

// GenerationState is generations/<n>/generation.json, the commit point of a recovery:
// generation n exists, its stream starts at Snapshot.
type GenerationState struct {
	Generation int    `json:"generation"`
	Attempt    int    `json:"attempt"`
	AppID      string `json:"app_id"`
	Mode       string `json:"mode"`
	// Snapshot is S: the new snapshot's LSN (full: its stamp; chunked: the open's S). The
	// generation's stream treats it as processed and reads every commit after it.
	Snapshot lsn.Offset `json:"snapshot"`
	// From, LostFromTS and LostToTS are the gap, as the attempt recorded it.
	From       lsn.Offset `json:"from"`
	LostFromTS *time.Time `json:"lost_from_ts"`
	LostToTS   *time.Time `json:"lost_to_ts"`
	At         time.Time  `json:"at"`
}

// Generations is what the checkpoint says about the stream's generations.
type Generations struct {
	// Live is the newest committed generation; its Generation is 0 (and the rest zero)
	// when none was ever opened.
	Live GenerationState
	// Attempts are the attempts to open generation Live+1, oldest first.
	Attempts []AttemptState
}

// AttemptState is one attempt and its failure, if it failed.
type AttemptState struct {
	Attempt Attempt
	Failed  *Failure
}

// Open is the attempt to open generation Live+1 still running (the newest, not failed),
// or nil.
func (g Generations) Open() *Attempt {
	if n := len(g.Attempts); n > 0 && g.Attempts[n-1].Failed == nil {
		a := g.Attempts[n-1].Attempt
		return &a
	}
	return nil
}

// NextAttempt is the number the next attempt to open generation Live+1 takes.
func (g Generations) NextAttempt() int { return len(g.Attempts) + 1 }

// Last is the newest automatic re-snapshot or failed attempt (what the anti-loop interval
// counts from, docs/reference/original-library.md §7.5): kind "resnapshot" (the live
// generation's commit) or "failed" (an attempt's failure). ok is false when there was none.
func (g Generations) Last() (kind string, gen, attempt int, at time.Time, ok bool) {
	if g.Live.Generation > 0 {
		kind, gen, attempt, at, ok = "resnapshot", g.Live.Generation, g.Live.Attempt, g.Live.At, true
	}
	for _, a := range g.Attempts {
		if a.Failed != nil && (!ok || a.Failed.FailedAt.After(at)) {
			kind, gen, attempt, at, ok = "failed", a.Attempt.Generation, a.Attempt.Attempt, a.Failed.FailedAt, true
		}
	}
	return kind, gen, attempt, at, ok
}

func generationKey(n int) string { return GenerationPrefix(n) + "generation.json" }
func attemptsDir(n int) string   { return GenerationPrefix(n) + "attempts/" }
func attemptKey(n, a int) string { return attemptsDir(n) + strconv.Itoa(a) + ".json" }
func failureKey(n, a int) string { return attemptsDir(n) + strconv.Itoa(a) + ".failed.json" }

// Generations reads the generation state under the checkpoint root: the live generation
// and the attempts to open the next. Generation n's files are found with one LIST of
// generations/<n>/, from generation 1 up to the first not committed; the live
// generation's generation.json and each attempt and failure file are then read once
// (every one is written once and never changed or deleted, so a key's content never
// changes).
//
// A Checkpoint remembers what it read: a later call (the next invocation of a warm
// process) starts at the live generation it knew and lists only generations/<live+1>/ —
// one request — reading nothing more when the listing shows the same attempt and failure
// files and no commit. Whatever another process wrote meanwhile (an attempt, its failure,
// the generation's commit) shows in that listing, so the answer is the one a cold read
// would give.
func (c *Checkpoint) Generations(ctx context.Context) (Generations, error) {
	c.mu.Lock()
	m := c.gens
	c.mu.Unlock()
	if m == nil {
		m = &genMemo{}
	}
	n := m.g.Live.Generation
	var keys []string
	for {
		var committed bool
		var err error
		if keys, committed, err = c.listGeneration(ctx, n+1); err != nil {
			return Generations{}, fmt.Errorf("read generations: %w", err)
		}
		if !committed {
			break
		}
		n++
	}
	if m.keys != nil && n == m.g.Live.Generation && slices.Equal(keys, m.keys) {
		return m.g.clone(), nil
	}
	next := &genMemo{keys: keys, files: map[string]any{}}
	if n == m.g.Live.Generation {
		next.g.Live = m.g.Live
		if m.files != nil {
			next.files = maps.Clone(m.files) // the same generation's attempts: their files are unchanged
		}
	} else if err := c.getJSON(ctx, generationKey(n), &next.g.Live); err != nil {
		return Generations{}, err
	} else if next.g.Live.Generation != n {
		return Generations{}, fmt.Errorf("read generations: %s says generation %d", generationKey(n), next.g.Live.Generation)
	}
	// keys are sorted; attempt numbers are not in key order ("10" < "9"), hence nums. A
	// number is read only as attemptKey and failureKey write it (keyNumber).
	failed := map[int]bool{}
	var nums []int
	for _, k := range keys {
		name := strings.TrimPrefix(k, attemptsDir(n+1))
		if a, ok := strings.CutSuffix(name, ".failed.json"); ok {
			if i, ok := keyNumber(a); ok {
				failed[int(i)] = true
			}
			continue
		}
		if a, ok := strings.CutSuffix(name, ".json"); ok {
			if i, ok := keyNumber(a); ok && i > 0 {
				nums = append(nums, int(i))
			}
		}
	}
	sort.Ints(nums)
	for _, i := range nums {
		var st AttemptState
		if err := next.read(ctx, c, attemptKey(n+1, i), &st.Attempt); err != nil {
			return Generations{}, err
		}
		if failed[i] {
			var f Failure
			if err := next.read(ctx, c, failureKey(n+1, i), &f); err != nil {
				return Generations{}, err
			}
			st.Failed = &f
		}
		next.g.Attempts = append(next.g.Attempts, st)
	}
	c.mu.Lock()
	c.gens = next
	c.mu.Unlock()
	return next.g.clone(), nil
}

// KnownGenerations is what this Checkpoint's last Generations call returned, without a
// request; ok is false when it made none. It may be stale: a caller that acts on it
// without calling Generations must learn of a generation opened since in another way (the
// stream's warm resume: an attempt is opened only by a stream that wrote a later batch's
// offsets in the live generation, docs/decisions/0017-warm-resume-by-head.md).
func (c *Checkpoint) KnownGenerations() (g Generations, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens == nil {
		return Generations{}, false
	}
	return c.gens.g.clone(), true
}

// genMemo is what a Checkpoint's last Generations call found: the answer, the sorted
// generation.json and attempt keys of generations/<live+1>/ it was read from, and the
// attempt and failure files read (by key: Attempt or Failure values).
type genMemo struct {
	g     Generations
	keys  []string
	files map[string]any
}

// read decodes the attempt or failure file key into v (*Attempt or *Failure), once per
// memo's generation.
func (m *genMemo) read(ctx context.Context, c *Checkpoint, key string, v any) error {
	switch have := m.files[key].(type) {
	case Attempt:
		if p, ok := v.(*Attempt); ok {
			*p = have
			return nil
		}
	case Failure:
		if p, ok := v.(*Failure); ok {
			*p = have
			return nil
		}
	}
	if err := c.getJSON(ctx, key, v); err != nil {
		return err
	}
	switch p := v.(type) {
	case *Attempt:
		m.files[key] = *p
	case *Failure:
		m.files[key] = *p
	}
	return nil
}

// clone is g with its own Attempts slice (callers may append to theirs).
func (g Generations) clone() Generations {
	g.Attempts = slices.Clone(g.Attempts)
	return g
}

// listGeneration lists generations/<n>/ (one request unless it holds over a thousand
// files): committed when its generation.json exists, and the sorted keys that decide
// Generations (generation.json, attempts/*.json); claims and a committed generation's
// own checkpoint files are left out.
func (c *Checkpoint) listGeneration(ctx context.Context, n int) (keys []string, committed bool, err error) {
	for info, err := range c.store.List(ctx, GenerationPrefix(n), "") {
		if err != nil {
			return nil, false, err
		}
		switch {
		case info.Key == generationKey(n):
			committed = true
		case strings.HasPrefix(info.Key, attemptsDir(n)) && strings.HasSuffix(info.Key, ".json"):
		default:
			continue
		}
		keys = append(keys, info.Key)
	}
	sort.Strings(keys)
	if keys == nil {
		keys = []string{}
	}
	return keys, committed, nil
}

// OpenAttempt records attempt a to open generation a.Generation, before any snapshot is
// taken. *ConcurrentStreamError when another writer recorded a different attempt under the
// same number; rewriting the same attempt is a no-op.
func (c *Checkpoint) OpenAttempt(ctx context.Context, a Attempt) error {
	if a.Generation < 1 || a.Attempt < 1 {
		return fmt.Errorf("open attempt: generation %d attempt %d: both must be >= 1", a.Generation, a.Attempt)
	}
	return c.putOnce(ctx, attemptKey(a.Generation, a.Attempt), a)
}

// FailAttempt records that attempt of generation gave up (a full re-snapshot that outlived
// the retention). A second failure of the same attempt keeps the first.
func (c *Checkpoint) FailAttempt(ctx context.Context, generation, attempt int, f Failure) error {
	err := c.putOnce(ctx, failureKey(generation, attempt), f)
	var cs *ConcurrentStreamError
	if errors.As(err, &cs) {
		return nil // failed already: the first record stands
	}
	return err
}

// CommitGeneration writes generations/<n>/generation.json, the commit point of a recovery:
// from then on the stream runs generation n. Writing it again with the same snapshot is a
// no-op; another generation state under the same number is a *ConcurrentStreamError.
func (c *Checkpoint) CommitGeneration(ctx context.Context, g GenerationState) error {
	if g.Generation < 1 {
		return fmt.Errorf("commit generation %d: must be >= 1", g.Generation)
	}
	err := c.putOnce(ctx, generationKey(g.Generation), g)
	var cs *ConcurrentStreamError
	if errors.As(err, &cs) {
		var have GenerationState
		if c.getJSON(ctx, generationKey(g.Generation), &have) == nil && have.Snapshot.LSN == g.Snapshot.LSN && have.Attempt == g.Attempt {
			return nil // our own earlier commit (its at differs)
		}
	}
	return err
}

// Generation is generation n's stream checkpoint: the root itself for 0, else the prefix
// generations/<n>/ with app_id <app_id>.g<n>.
//
// The same *Checkpoint is returned for n on every call, so that its memory of its own
// writes (Resume, Commits) lasts as long as the root's: a warm process resumes generation
// n as it resumes generation 0.
func (c *Checkpoint) Generation(n int) *Checkpoint {
	if n <= 0 {
		return c
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.byGen[n]; ok {
		return g
	}
	g := &Checkpoint{store: &prefixStore{Store: c.store, prefix: GenerationPrefix(n)},
		appID: GenerationAppID(c.appID, n), writer: c.writer, Retain: c.Retain}
	if c.byGen == nil {
		c.byGen = map[int]*Checkpoint{}
	}
	c.byGen[n] = g
	return g
}

// Store is the checkpoint's storage (the snapshot steps stage under it).
func (c *Checkpoint) Store() storage.Store { return c.store }

// AppID is the app_id the checkpoint belongs to.
func (c *Checkpoint) AppID() string { return c.appID }

func (c *Checkpoint) getJSON(ctx context.Context, key string, v any) error {
	data, err := c.get(ctx, key)
	if err != nil {
		return fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	if err := unmarshal(data, v); err != nil {
		return fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	return nil
}

// Claim is generations/<n>/claims/<a>/<k>.json: the recover execution that takes attempt a
// (docs/stream.md "Data loss"). The stream asks for a recovery on every invocation while
// its attempt is open and unclaimed, so that a lost request is asked again; the first
// execution claims it and the others stop. The claim with the highest k holds; a takeover
// (a person restarting a recovery whose execution failed) writes the next k.
type Claim struct {
	Execution string    `json:"execution"`
	At        time.Time `json:"at"`
}

func claimsDir(n, a int) string { return GenerationPrefix(n) + "claims/" + strconv.Itoa(a) + "/" }

// ClaimHolder is the execution holding attempt a of generation n ("" when none claimed
// it).
func (c *Checkpoint) ClaimHolder(ctx context.Context, n, a int) (Claim, int, error) {
	return c.claimHolder(ctx, claimsDir(n, a))
}

// ClaimAttempt claims attempt a of generation n for execution: ok when it holds the claim
// (its own, a new one, or taken over with takeover), else the holder's claim and false.
// Two executions racing for a claim number both read the winner's.
func (c *Checkpoint) ClaimAttempt(ctx context.Context, n, a int, execution string, takeover bool, now time.Time) (Claim, bool, error) {
	return c.claim(ctx, claimsDir(n, a), fmt.Sprintf("attempt %d of generation %d", a, n), execution, takeover, now)
}
