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
// that unwrap, logstore.Unwrap) on the same DynamoDB table, through the same client or one
// of the same region and endpoint. Two tables of one spec (bronze and its facts table)
// are.
func (l *LogStore) JointWith(other logstore.LogStore) bool {
	o, ok := logstore.Unwrap(other).(*LogStore)
	return ok && o != l && o.table == l.table && sameService(l.ddb, o.ddb)
}

// LatestWith is Latest of l and of other (logstore.Joint). When both know their newest
// version (an observation less than KnownFor old that identified its entry, as a Latest,
// Write or first open on the same log leaves it) and JointWith(other), it asks for both
// in one strongly consistent BatchGetItem: the entry of the version each knows and the
// one after it. The entry known there with the tempPath known, complete, and none after
// it is what Latest's Query concludes on (the same log, nothing committed since: a
// version committed after the observation would still have its entry, KnownFor being
// well under every writer's TTL), and is answered so. Every other answer (an entry
// after it, the known one another's, gone or incomplete, a key the request left
// unprocessed) and a log store without such an observation is asked by its own Latest,
// which decides as it always does (recovery, started over told: Replaced). So the
// answers are Latest's; a warm stream pays one request for both tables where it paid
// two Queries (docs/decisions/0019-dynamo-warm-check-one-request.md).
func (l *LogStore) LatestWith(ctx context.Context, other logstore.LogStore) (int64, int64, error) {
	o, _ := logstore.Unwrap(other).(*LogStore)
	if !l.JointWith(other) {
		o = nil
	}
	stores := []*LogStore{l}
	if o != nil {
		stores = append(stores, o)
	}
	answers, err := jointLatest(ctx, l.ddb, l.table, stores)
	if err != nil {
		return 0, 0, err
	}
	v, err := answers[0].or(ctx, l)
	if err != nil {
		return 0, 0, err
	}
	var ov int64
	if o != nil {
		ov, err = answers[1].or(ctx, o)
	} else {
		ov, err = other.Latest(ctx)
	}
	if err != nil {
		return 0, 0, err
	}
	return v, ov, nil
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
// next one, and answers for the stores whose known entry stands as it was observed with
// no entry after it (see LatestWith). No request when no store knows its newest entry.
func jointLatest(ctx context.Context, ddb Client, table string, stores []*LogStore) ([]jointAnswer, error) {
	answers := make([]jointAnswer, len(stores))
	type ask struct {
		kn  known
		gen uint64
	}
	asks := make([]*ask, len(stores))
	var keys []map[string]types.AttributeValue
	for i, s := range stores {
		s.mu.Lock()
		kn, gen, fresh := s.known, s.replaced, s.fresh()
		s.mu.Unlock()
		if !fresh || kn.Version < 0 || kn.TempPath == "" {
			continue
		}
		asks[i] = &ask{kn, gen}
		keys = append(keys, itemKey(s.tablePath, kn.Version), itemKey(s.tablePath, kn.Version+1))
	}
	if len(keys) == 0 {
		return answers, nil
	}
	askedAt := stores[0].opts.Now()
	out, err := ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		},
	})
	if err != nil {
		return nil, wrap("latest: get newest entries of", stores[0].hint()+1, err)
	}
	got := map[string]map[int64]entry{}
	for _, item := range out.Responses[table] {
		e, err := parseEntry(item)
		if err != nil {
			continue // the store's own Latest reads it and says what is wrong
		}
		if got[e.TablePath] == nil {
			got[e.TablePath] = map[int64]entry{}
		}
		got[e.TablePath][e.Version] = e
	}
	unprocessed := map[string]bool{}
	for _, k := range out.UnprocessedKeys[table].Keys {
		if p, ok := k[attrTablePath].(*types.AttributeValueMemberS); ok {
			unprocessed[p.Value] = true
		}
	}
	for i, s := range stores {
		a := asks[i]
		if a == nil || unprocessed[s.tablePath] {
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
