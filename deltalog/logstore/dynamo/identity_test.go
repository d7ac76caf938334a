package dynamo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
)

// getItemClient serves GetItem from the entries it holds, by their key, and counts the
// calls; Latest's Query is not made here (checkIdentity is given its page), and the other
// methods are not called.
type getItemClient struct {
	Client // nil: any other call panics
	items  []entry
	gets   int
}

func (c *getItemClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets++
	tp, _ := in.Key[attrTablePath].(*types.AttributeValueMemberS)
	name, _ := in.Key[attrFileName].(*types.AttributeValueMemberS)
	if tp == nil || name == nil || len(in.Key) != 2 {
		return nil, fmt.Errorf("GetItem: key %v is not {tablePath, fileName}", in.Key)
	}
	for _, e := range c.items {
		if e.TablePath == tp.Value && commitlog.FileName(e.Version) == name.Value {
			return &dynamodb.GetItemOutput{Item: e.claimItem()}, nil
		}
	}
	return &dynamodb.GetItemOutput{}, nil
}

// checkIdentity, for a LogStore that knew version 3: the entry of 3 with the tempPath known
// identifies the log, another tempPath or (within KnownFor) none is a replaced log; known
// with no entry, an entry at or below 3 made since is suspect (one below 3 too, with 3's
// gone). The page decides when it reaches down to 3 or is not full; a full page all above 3
// has entry 3 (only) read with one GetItem.
func TestCheckIdentity(t *testing.T) {
	const tablePath = "s3://bucket/t"
	at := time.Unix(1_700_000_000, 0)
	ent := func(v int64, id string) entry {
		return entry{TablePath: tablePath, Version: v, TempPath: fmt.Sprintf(".tmp/%020d.json.%s", v, id), Complete: true}
	}
	mine := ent(3, "mine")
	page := func(entries ...entry) []entry { return entries }
	var fullPage []entry // 32 entries, 40 down to 9: all above 3
	for v := int64(40); len(fullPage) < entriesQueried; v-- {
		fullPage = append(fullPage, ent(v, "x"))
	}
	type want struct{ replaced, identified, suspect bool }
	for _, c := range []struct {
		name     string
		kn       known
		page     []entry
		full     bool
		items    []entry // what a GetItem finds
		after    time.Duration
		want     want
		wantGets int
	}{
		{name: "nothing known", kn: known{Version: -1}, page: page(ent(5, "x")), want: want{}},

		{name: "tempPath/entry kept", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: page(ent(5, "x"), ent(4, "x"), mine, ent(2, "x")), want: want{identified: true}},
		{name: "tempPath/entry another", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: page(ent(5, "x"), ent(4, "x"), ent(3, "new")), want: want{replaced: true}},
		{name: "tempPath/entry gone within KnownFor", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: page(ent(5, "x"), ent(4, "x"), ent(2, "x")), want: want{replaced: true}},
		{name: "tempPath/entry gone after KnownFor", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: page(ent(5, "x"), ent(2, "x")), after: DefaultKnownFor, want: want{}},
		{name: "tempPath/page above, not full", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: page(ent(5, "x"), ent(4, "x")), want: want{replaced: true}},
		{name: "tempPath/no entry", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: nil, after: DefaultKnownFor, want: want{}},
		{name: "tempPath/full page above, kept", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: fullPage, full: true, items: []entry{mine}, want: want{identified: true}, wantGets: 1},
		{name: "tempPath/full page above, another", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: fullPage, full: true, items: []entry{ent(3, "new")}, want: want{replaced: true}, wantGets: 1},
		{name: "tempPath/full page above, gone", kn: known{Version: 3, At: at, TempPath: mine.TempPath}, page: fullPage, full: true, items: []entry{ent(2, "x")}, want: want{replaced: true}, wantGets: 1},

		{name: "no entry known/none now", kn: known{Version: 3, At: at}, page: nil, want: want{}},
		{name: "no entry known/entry at", kn: known{Version: 3, At: at}, page: page(ent(5, "x"), ent(4, "x"), ent(3, "new")), want: want{suspect: true}},
		{name: "no entry known/entry below", kn: known{Version: 3, At: at}, page: page(ent(5, "x"), ent(4, "x"), ent(2, "new")), want: want{suspect: true}},
		{name: "no entry known/entry below, after KnownFor", kn: known{Version: 3, At: at}, page: page(ent(2, "new")), after: DefaultKnownFor, want: want{suspect: true}},
		{name: "no entry known/page above, not full", kn: known{Version: 3, At: at}, page: page(ent(5, "x"), ent(4, "x")), want: want{}},
		{name: "no entry known/full page above, entry at", kn: known{Version: 3, At: at}, page: fullPage, full: true, items: []entry{ent(3, "new")}, want: want{suspect: true}, wantGets: 1},
		{name: "no entry known/full page above, entry below only", kn: known{Version: 3, At: at}, page: fullPage, full: true, items: []entry{ent(2, "new")}, want: want{}, wantGets: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ddb := &getItemClient{items: c.items}
			l, err := New(ddb, nil, Options{TablePath: tablePath})
			if err != nil {
				t.Fatal(err)
			}
			id, err := l.checkIdentity(t.Context(), c.kn, c.page, c.full, at.Add(c.after))
			if got := (want{id == idReplaced, id == idSame, id == idSuspect}); err != nil || got != c.want {
				t.Errorf("checkIdentity = %+v, %v; want %+v", got, err, c.want)
			}
			if ddb.gets != c.wantGets {
				t.Errorf("%d GetItem, want %d", ddb.gets, c.wantGets)
			}
		})
	}
}
