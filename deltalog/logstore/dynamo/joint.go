package dynamo

import (
	"context"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

var _ logstore.Joint = (*LogStore)(nil)

// JointWith reports whether LatestWith can ask for other's newest entries in the request
// it makes for l's (logstore.Joint): other is a DynamoDB log store (under any wrappers
// that unwrap, logstore.Unwrap) of another Delta table (another tablePath: one table's
// keys twice in one request are refused by DynamoDB) on the same DynamoDB table, through
// the same client or one of the same region and endpoint. Two tables of one spec (bronze
// and its facts table) are.
func (l *LogStore) JointWith(other logstore.LogStore) bool {
	o, ok := logstore.Unwrap(other).(*LogStore)
	return ok && o != l && o.tablePath != l.tablePath && o.table == l.table && sameService(l.ddb, o.ddb)
}

// LatestWith is Latest of l and, when it costs no request more, of other
// (logstore.Joint). When l knows its newest version (an observation less than KnownFor
// old that identified its entry, as a Latest, Write or first open on the same log leaves
// it), it asks in one strongly consistent BatchGetItem for the entry of that version and
// the one after it, and for other's too when JointWith(other) and other knows its newest
// version so. The entry known there with the tempPath known, complete, and none after it
// is what Latest's Query concludes on (the same log, nothing committed since: a version
// committed after the observation would still have its entry, KnownFor being well under
// every writer's TTL), and is answered so. For l anything else (an entry after it, the
// known one another's, gone or incomplete, a key left unprocessed, an unparsable item),
// and an l without such an observation, goes to l's own Latest, which decides as it
// always does (recovery, started over told: Replaced); for other, ok is false and the
// caller asks other's Latest when it needs it. So every answer is one Latest gives, and
// LatestWith never makes more requests than l's Latest alone but for that fallback;
// a warm stream pays one request for its facts table and bronze where it paid two Queries
// (docs/decisions/0019-dynamo-warm-check-one-request.md).
func (l *LogStore) LatestWith(ctx context.Context, other logstore.LogStore) (v, otherV int64, ok bool, err error) {
	mine := l.ask()
	if mine == nil {
		v, err = l.Latest(ctx)
		return v, 0, false, err
	}
	stores, asks := []*LogStore{l}, []*ask{mine}
	if o, _ := logstore.Unwrap(other).(*LogStore); o != nil && l.JointWith(other) {
		if theirs := o.ask(); theirs != nil {
			stores, asks = append(stores, o), append(asks, theirs)
		}
	}
	answered, err := jointLatest(ctx, l.ddb, l.table, stores, asks)
	if err != nil {
		return 0, 0, false, err
	}
	if v, err = answered[0].or(ctx, l); err != nil {
		return 0, 0, false, err
	}
	if len(answered) > 1 && answered[1].ok {
		return v, answered[1].version, true, nil
	}
	return v, 0, false, nil
}

// ask is what a joint request checks for a log store: its observation, when fresh and
// identified by its entry's tempPath (nil: none such), and the count of replaced logs it
// was made under.
type ask struct {
	kn  known
	gen uint64
}

// ask returns the log store's ask, nil when its observation cannot be checked by the
// entry it names (none, older than KnownFor, an empty log, or made with no entry).
func (l *LogStore) ask() *ask {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.fresh() || l.known.Version < 0 || l.known.TempPath == "" {
		return nil
	}
	return &ask{l.known, l.replaced}
}

// jointAnswer is what the joint request decided for one log store: ok with the version
// when it answered, else the store's own Latest must.
type jointAnswer struct {
	ok      bool
	version int64
}

// or is the answer, or the store's own Latest when the joint request did not answer.
func (a jointAnswer) or(ctx context.Context, l *LogStore) (int64, error) {
	if a.ok {
		return a.version, nil
	}
	return l.Latest(ctx)
}

// jointLatest asks, in one BatchGetItem through ddb, for each store's known entry and the
// next one (asks[i] is stores[i]'s), and answers for the stores whose known entry stands
// as it was observed with no entry after it (see LatestWith).
func jointLatest(ctx context.Context, ddb Client, table string, stores []*LogStore, asks []*ask) ([]jointAnswer, error) {
	keys := make([]map[string]types.AttributeValue, 0, 2*len(stores))
	for i, s := range stores {
		keys = append(keys, itemKey(s.tablePath, asks[i].kn.Version), itemKey(s.tablePath, asks[i].kn.Version+1))
	}
	askedAt := stores[0].opts.Now()
	out, err := ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		},
	})
	if err != nil {
		return nil, wrap("latest: get newest entries of", asks[0].kn.Version+1, err)
	}
	// undecided: the tablePaths with a key left unprocessed or an item that cannot be
	// parsed (its key attribute says whose: an unparsable entry after the one known is
	// still a claim of the next version, which the store's own Latest reads and says
	// what is wrong with).
	undecided := map[string]bool{}
	tablePathOf := func(item map[string]types.AttributeValue) {
		if p, ok := item[attrTablePath].(*types.AttributeValueMemberS); ok {
			undecided[p.Value] = true
		}
	}
	got := map[string]map[int64]entry{}
	for _, item := range out.Responses[table] {
		e, err := parseEntry(item)
		if err != nil {
			tablePathOf(item)
			continue
		}
		if got[e.TablePath] == nil {
			got[e.TablePath] = map[int64]entry{}
		}
		got[e.TablePath][e.Version] = e
	}
	for _, k := range out.UnprocessedKeys[table].Keys {
		tablePathOf(k)
	}
	answers := make([]jointAnswer, len(stores))
	for i, s := range stores {
		a := asks[i]
		if undecided[s.tablePath] {
			continue
		}
		mine, found := got[s.tablePath][a.kn.Version]
		_, next := got[s.tablePath][a.kn.Version+1]
		if !found || next || !mine.Complete || mine.TempPath != a.kn.TempPath {
			continue
		}
		s.mu.Lock()
		same := s.replaced == a.gen
		s.mu.Unlock()
		if !same {
			continue
		}
		s.observe(a.kn.Version, askedAt, a.kn.TempPath, "")
		answers[i] = jointAnswer{ok: true, version: a.kn.Version}
	}
	return answers, nil
}

// sameService reports whether a and b reach the same DynamoDB service: the same client
// (compared as values, so two identical wrappers of one client are the same), or two SDK
// clients of the same region and endpoint.
func sameService(a, b Client) (same bool) {
	defer func() {
		if recover() != nil { // a client type whose values cannot be compared
			same = false
		}
	}()
	if a == nil || b == nil {
		return false
	}
	if reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b {
		return true
	}
	ca, okA := a.(*dynamodb.Client)
	cb, okB := b.(*dynamodb.Client)
	if !okA || !okB {
		return false
	}
	oa, ob := ca.Options(), cb.Options()
	return oa.Region != "" && oa.Region == ob.Region && aws.ToString(oa.BaseEndpoint) == aws.ToString(ob.BaseEndpoint)
}
