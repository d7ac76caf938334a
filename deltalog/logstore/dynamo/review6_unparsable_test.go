package dynamo_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// An unparsable item at N+1 (another writer's claim this log store cannot read, here one
// without "complete"): Latest's Query fails on it (the newest entry unparsable is an
// error), and LatestWith must not answer N for it (it skipped the item and did, a version
// Latest never gives while N+1 is claimed): as the first, its Latest says what is wrong;
// as the second, it is not answered.
func TestReview6UnparsableNextNotAnswered(t *testing.T) {
	for _, second := range []bool{false, true} {
		f := newJointFixture(t, 3)
		f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
		l := f.bronze
		if second {
			l = f.facts
		}
		if _, err := f.e.ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &f.e.table, Item: map[string]types.AttributeValue{
			"tablePath": &types.AttributeValueMemberS{Value: l.TablePathKey()},
			"fileName":  &types.AttributeValueMemberS{Value: strings.TrimPrefix(logKey(3), "_delta_log/")},
			"tempPath":  &types.AttributeValueMemberS{Value: ".tmp/00000000000000000003.json.odd"},
		}}); err != nil {
			t.Fatal(err)
		}
		twin := f.open(f.storeOf(l), false)
		_, latestErr := twin.Latest(t.Context())
		if latestErr == nil {
			t.Fatal("Latest with an unparsable newest entry: no error")
		}
		v, ov, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
		switch {
		case !second && err == nil:
			t.Errorf("bronze's N+1 unparsable: LatestWith = %d, %d, %v, nil; Latest says %v", v, ov, ok, latestErr)
		case second && err == nil && ok:
			t.Errorf("facts' N+1 unparsable: LatestWith answered facts %d; its Latest says %v", ov, latestErr)
		}
	}
}
