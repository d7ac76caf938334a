package dynamo

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
)

// Attribute names of the commit entry, exactly as Delta's S3DynamoDBLogStore (Java,
// BaseExternalLogStore / ExternalCommitEntry) and delta-rs's S3DynamoDbLogStore write them.
// The Java class comment says "filename" and "commitTime"; the code, and this, use
// fileName and expireTime.
const (
	attrTablePath  = "tablePath"  // HASH key, S: the table path (see TablePath)
	attrFileName   = "fileName"   // RANGE key, S: "<v:020>.json"
	attrTempPath   = "tempPath"   // S: temp commit file relative to <table>/_delta_log/
	attrComplete   = "complete"   // S: "true" or "false" (strings, not BOOL)
	attrExpireTime = "expireTime" // N: epoch seconds; set only when complete; the TTL attribute
)

// entry is one commit entry (one item of the delta_log table): the claim on version
// Version of the table, whose bytes wait in TempPath until copied to <Version:020>.json.
type entry struct {
	TablePath string
	Version   int64
	TempPath  string // relative to _delta_log/: ".tmp/<v:020>.json.<uuid>" (Java) or "_commit_<uuid>.json.tmp" (delta-rs)
	Complete  bool
}

// tempKey is the store key of the entry's temp file.
func (e entry) tempKey() string { return commitlog.Dir + e.TempPath }

// claimItem is the item a writer puts to claim a version: incomplete, without expireTime.
func (e entry) claimItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrTablePath: &types.AttributeValueMemberS{Value: e.TablePath},
		attrFileName:  &types.AttributeValueMemberS{Value: commitlog.FileName(e.Version)},
		attrTempPath:  &types.AttributeValueMemberS{Value: e.TempPath},
		attrComplete:  &types.AttributeValueMemberS{Value: "false"},
	}
}

func itemKey(tablePath string, v int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrTablePath: &types.AttributeValueMemberS{Value: tablePath},
		attrFileName:  &types.AttributeValueMemberS{Value: commitlog.FileName(v)},
	}
}

func expireValue(now time.Time, ttl time.Duration) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(ttl).Unix(), 10)}
}

// parseEntry reads an item. Like delta-rs, a fileName that is not "<20 digits>.json" is
// inconsistent data.
func parseEntry(item map[string]types.AttributeValue) (entry, error) {
	str := func(name string) (string, error) {
		v, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("commit entry: attribute %s missing or not a string", name)
		}
		return v.Value, nil
	}
	var e entry
	var err error
	if e.TablePath, err = str(attrTablePath); err != nil {
		return entry{}, err
	}
	name, err := str(attrFileName)
	if err != nil {
		return entry{}, err
	}
	v, ok := commitlog.ParseFileName(name)
	if !ok {
		return entry{}, fmt.Errorf("commit entry: fileName %q is not <20 digits>.json", name)
	}
	e.Version = v
	if e.TempPath, err = str(attrTempPath); err != nil {
		return entry{}, err
	}
	complete, err := str(attrComplete)
	if err != nil {
		return entry{}, err
	}
	e.Complete = complete == "true"
	return e, nil
}
